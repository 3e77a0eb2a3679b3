"""Compile a derived moment system to a fast numeric right-hand side (Params, Gaussian) → (ṁ, Σ̇).

Two code paths, chosen per system (mode="auto"):

* "matrix": the dimension-free matrix form is printed to numpy (matrix products, common
  subexpressions shared between ṁ and J). The covariance uses the transpose symmetry
  Σ̇ = JΣ + (JΣ)ᵀ: the product JΣ is formed once and its transpose added. One compiled function
  serves every d.
* "elementwise": `lambdify(cse=True)` of the entries ṁ_i and Σ̇_ij (i ≤ j) over a flat vector of
  scalars; faster than numpy only for very small d (`ELEMENTWISE_MAX_D`).

Compiled artefacts are cached per (system, mode) — and per d for the element-wise path —
until `clear_caches()`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import numpy as np
import sympy as sp
from numpy.typing import ArrayLike, NDArray
from sympy.printing.numpy import NumPyPrinter

from ..errors import InvalidInputError
from ..state.params import Gaussian, Params, check_dims
from ..state.validation import as_matrix
from ..state.validation.conversion import _as_float_array
from .derivation import MomentSystem
from .symbols import DIM, WIDTH, LayerSymbols

if TYPE_CHECKING:
    from ..empirical.particles import FeedForward

__all__ = ["ELEMENTWISE_MAX_D", "CompiledMomentRHS", "compile_moment_rhs"]

#: "auto" compiles element-wise up to this d (polynomial systems only), in matrix form above
ELEMENTWISE_MAX_D = 3
MODES = ("auto", "matrix", "elementwise")

#: the compiled feature code of a matrix-form closure: (inputs (μ, cov) of every feature,
#: [(scalar closed form (μ, s), value at s = 0 (μ), diagonal)])
Features: TypeAlias = tuple[Callable[..., Any],
                            list[tuple[Callable[..., Any], Callable[..., Any], bool]]]
#: the upper-triangle indices (rows, cols) of Σ̇ in the element-wise code
FlatIndex: TypeAlias = tuple[NDArray[np.intp], NDArray[np.intp]]

#: compiled code per (system key, mode, d): (fn, features) or (fn, flat index)
_CACHE: dict[tuple[Hashable, ...], tuple[Callable[..., Any], Any]] = {}


class _Printer(NumPyPrinter):
    """NumPy printer that also prints a symbolic-size identity, numpy.eye(d)."""

    def _print_Identity(self, expr: sp.Identity) -> str:
        return f"{self._module_format('numpy.eye')}({self._print(expr.rows)})"


def _lambdify(args: Sequence[object], exprs: object, **kw: Any) -> Callable[..., Any]:
    return sp.lambdify(args, exprs, cse=True, docstring_limit=0, **kw)


def _rect(name: str, value: ArrayLike, shape: tuple[int, ...]) -> NDArray[np.float64]:
    arr = _as_float_array(name, value)
    if arr.ndim == 2 and len(shape) == 1 and 1 in arr.shape:
        arr = arr.reshape(-1)
    if arr.shape != shape:
        raise InvalidInputError(f"{name} must have shape {shape}, got {arr.shape}")
    return arr


def _ffn_triple(ffn: Sequence[ArrayLike] | FeedForward | None) -> Sequence[ArrayLike] | None:
    """(W, U, c) of a `particles.FeedForward` (recognised by its attributes, so that the particle
    code is not imported here), or `ffn` as given."""
    if all(hasattr(ffn, name) for name in ("W", "U", "c")):
        layer = cast("FeedForward", ffn)
        assert layer.c is not None  # FeedForward fills c (zeros by default) at construction
        return (layer.W, layer.U, layer.c)
    return cast("Sequence[ArrayLike] | None", ffn)


class CompiledMomentRHS:
    """(params, gaussian, *, K=None, ffn=None) ↦ (ṁ, Σ̇) for a compiled `MomentSystem`.

    Evaluates the derived equations ṁ = E[X], Σ̇ = E[(x − m)Xᵀ] + E[X(x − m)ᵀ] at numbers: in
    matrix mode ṁ = `mean_rate` and Σ̇ = JΣ + (JΣ)ᵀ with JΣ formed once; in element-wise mode
    the entries ṁ_i and Σ̇_ij (i ≤ j). Calling it: params is a `Params` with as many heads as
    the system; gaussian a `Gaussian` on R^d. Gaussian-kernel systems need K (one d×d matrix per
    head; the heads' B_h are KᵀQ); ReLU systems need ffn = (W, U, c) with W (d×k), U (k×d),
    c (k,), or a `particles.FeedForward`. It returns new arrays of shapes (d,), (d, d);
    `source` holds the generated code. Made by `compile_moment_rhs`.

    Parameters
    ----------
    system : MomentSystem
        The derived system.
    mode : {"matrix", "elementwise"}
        The code path compiled.
    fn : callable
        The generated function: (controls, m, Σ, features, d, k) → (ṁ, J) in matrix mode,
        (flat vector of scalars) → (ṁ_i, Σ̇_ij for i ≤ j) element-wise.
    features : tuple, optional
        Matrix mode with ReLU terms: the code that evaluates the Gaussian features.
    flat_index : (ndarray, ndarray), optional
        Element-wise mode: the upper-triangle indices of Σ̇.

    Raises
    ------
    None
        Construction stores the code; calls raise InvalidInputError for Params or a Gaussian
        of the wrong dimension or number of heads, a missing or unexpected K or ffn, arrays of
        the wrong shape, or (element-wise) a right-hand side undefined at the point.

    See Also
    --------
    compile_moment_rhs : makes the callable.
    flow : integrates the moment equations numerically.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    The matrix and the element-wise code give the same Σ̇:

    >>> import numpy as np
    >>> from riccati_tf import Gaussian, Params
    >>> from riccati_tf.symbolic import compile_moment_rhs, transformer_system
    >>> system = transformer_system(2)
    >>> params = Params(np.array([[0.0, 1.0], [-1.0, 0.0]]), B=np.eye(2), V=0.1 * np.eye(2))
    >>> gaussian = Gaussian(np.array([1.0, 0.0]), np.eye(2))
    >>> matrix = compile_moment_rhs(system, mode="matrix")
    >>> entries = compile_moment_rhs(system, mode="elementwise")
    >>> matrix.mode, np.allclose(matrix(params, gaussian)[1], entries(params, gaussian)[1])
    ('matrix', True)
    """

    def __init__(self, system: MomentSystem, mode: str, fn: Callable[..., Any],
                 features: Features | None = None, flat_index: FlatIndex | None = None) -> None:
        self.system, self.mode, self._fn = system, mode, fn
        self._features = features
        self._flat_index = flat_index
        opts = system.options
        self.d = system.d
        self.heads = opts.get("heads")
        self.kernel, self.ffn = opts.get("kernel", "dot"), opts.get("ffn", "affine")

    @property
    def source(self) -> str:
        """The generated Python code."""
        fns = [self._fn] + ([self._features[0]] if self._features else [])
        return "\n".join(inspect.getsource(f) for f in fns)

    def _layer(self) -> LayerSymbols | None:
        return self.system.matrix_layer if self.mode == "matrix" else self.system.layer

    def _values(self, params: Params, gaussian: Gaussian, K: ArrayLike | None,
                ffn: Sequence[ArrayLike] | FeedForward | None) -> list[NDArray[np.float64]]:
        check_dims(params, gaussian)
        d = gaussian.d
        if d != self.d:
            raise InvalidInputError(f"this right-hand side was compiled for d = {self.d}, got a "
                                    f"Gaussian on R^{d}")
        layer = self._layer()
        if layer is None:
            return []
        heads, b = params.heads, params.b
        if len(heads) != len(layer.heads):
            raise InvalidInputError(f"the system has {len(layer.heads)} attention head(s) but "
                                    f"params has {len(heads)}")
        keys = None
        if layer.keys is not None:
            if K is None:
                raise InvalidInputError("Gaussian-kernel attention needs the key matrices K= "
                                        "(one per head; B_h = K_hᵀQ_h)")
            seq = [K] if np.ndim(K) == 2 else list(cast("Sequence[ArrayLike]", K))
            if len(seq) != len(layer.heads):
                raise InvalidInputError(f"K must give one d×d matrix per head "
                                        f"({len(layer.heads)}), got {len(seq)}")
            keys = [as_matrix(f"K[{h}]", k, d) for h, k in enumerate(seq)]
        elif K is not None:
            raise InvalidInputError("K= is only used by Gaussian-kernel (l2) systems")
        ffn_arrays = None
        if layer.ffn is not None:
            ffn = _ffn_triple(ffn)
            if ffn is None or len(ffn) != 3:
                raise InvalidInputError("the ReLU feed-forward system needs ffn=(W, U, c) or a "
                                        "particles.FeedForward")
            W = _as_float_array("ffn W", ffn[0])
            k = W.shape[1] if W.ndim == 2 else -1
            if self.mode == "elementwise":
                k = layer.ffn[2].shape[0]
            ffn_arrays = {"W": _rect("ffn W", W, (d, k)), "U": _rect("ffn U", ffn[1], (k, d)),
                          "c": _rect("ffn c", ffn[2], (k,))}
        elif ffn is not None:
            raise InvalidInputError("ffn= is only used by systems with a ReLU feed-forward layer")
        out = []
        for name, _ in layer.items():
            if name == "A":
                out.append(params.A)
            elif name == "b":
                out.append(b)
            elif isinstance(name, tuple):
                kind, h = name
                if kind == "K":
                    assert keys is not None  # ("K", h) bindings exist only when layer.keys does
                    out.append(keys[h])
                else:
                    out.append(heads[h][kind == "B"])
            else:
                assert ffn_arrays is not None  # "W", "U", "c" bindings exist only with layer.ffn
                out.append(ffn_arrays[name])
        return out

    def __call__(self, params: Params, gaussian: Gaussian, *,
                 K: ArrayLike | None = None,
                 ffn: Sequence[ArrayLike] | FeedForward | None = None
                 ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(ṁ, Σ̇) at `params` and `gaussian`: arrays of shapes (d,) and (d, d).

        K: the key matrices of a Gaussian-kernel system (one (d, d) array per head); ffn:
        (W, U, c) or a `particles.FeedForward` for a ReLU system. InvalidInputError for
        mismatched dimensions, heads, or a missing or unexpected K or ffn.
        """
        values = self._values(params, gaussian, K, ffn)
        m, S = gaussian.mean, gaussian.cov
        d = gaussian.d
        if self.mode == "elementwise":
            flat = np.concatenate([v.ravel() for v in values] + [m, S[self._flat_index]])
            try:
                out = np.array(self._fn(flat.tolist()), dtype=float)
            except (ZeroDivisionError, ValueError) as exc:
                raise InvalidInputError(f"the element-wise right-hand side is undefined here "
                                        f"({exc}); degenerate directions need mode='matrix'"
                                        ) from None
            dcov = np.empty((d, d))
            dcov[self._flat_index] = out[d:]
            dcov.T[self._flat_index] = out[d:]
            return out[:d], dcov
        args = [*values, m, S]
        k = values[-1].shape[0] if self.ffn == "relu" else 0  # c (k,) closes the list
        if self._features is not None:
            args += self._evaluate_features(args, d, k)
        rate, J = self._fn(*args, d, k)
        half = J @ S
        rate = np.broadcast_to(np.asarray(rate, dtype=float).reshape(-1), (d,)).copy()
        return rate, half + half.T

    def _evaluate_features(self, args: list[Any], d: int, k: int) -> list[NDArray[np.float64]]:
        assert self._features is not None  # called only for matrix forms with features
        inputs_fn, scalar_fns = self._features
        inputs = inputs_fn(*args, d, k)
        out: list[NDArray[np.float64]] = []
        for (fn, at_zero, diagonal), (mu, cov) in zip(scalar_fns, inputs, strict=True):
            mu = np.asarray(mu, dtype=float).reshape(-1)
            s = np.sqrt(np.clip(np.diagonal(cov), 0.0, None))
            pos = s > 0
            with np.errstate(all="ignore"):
                spread: NDArray[np.float64] = fn(mu, np.where(pos, s, 1.0))
                sharp: NDArray[np.float64] = at_zero(mu)
                val = np.where(pos, spread, sharp)
            out.append(np.diag(val) if diagonal else val)
        return out


def _compile_matrix(system: MomentSystem) -> tuple[Callable[..., Any], Features | None]:
    mf = system.matrix
    assert mf is not None  # compile_moment_rhs refuses mode="matrix" without a matrix form
    layer = system.matrix_layer
    g = mf.gaussian
    args = [sym for _, sym in layer.items()] if layer is not None else []
    args += [g.mean, g.cov]
    features: Features | None = None
    if mf.features:
        inputs = [[f.mean, f.cov] for f in mf.features]
        inputs_fn = _lambdify([*args, DIM, WIDTH], inputs, printer=_Printer)
        scalar_fns = []
        for f in mf.features:
            mu, s = f.variables
            scalar_fns.append((sp.lambdify((mu, s), f.scalar, modules=["scipy", "numpy"]),
                               sp.lambdify(mu, f.at_zero_spread.rewrite(sp.Max),
                                           modules=["numpy"]),
                               f.diagonal))
        features = (inputs_fn, scalar_fns)
        args += [f.symbol for f in mf.features]
    fn = _lambdify([*args, DIM, WIDTH], [mf.mean_rate, mf.jacobian], printer=_Printer)
    return fn, features


def _compile_elements(system: MomentSystem) -> tuple[Callable[..., Any], FlatIndex]:
    form = system.expand()
    d = system.d
    flat = [s for _, M in (form.layer.items() if form.layer is not None else []) for s in M]
    iu = np.triu_indices(d)
    flat += list(form.gaussian.mean) + [form.gaussian.cov[i, j] for i, j in zip(*iu, strict=True)]
    outputs = list(form.dmean) + [form.dcov[i, j] for i, j in zip(*iu, strict=True)]
    unbound = set().union(*(e.free_symbols for e in outputs)) - set(flat)
    if unbound:
        raise InvalidInputError(f"symbols {sorted(map(str, unbound))} are not bound to Params "
                                "or the Gaussian; pass layer= to derive_moment_equations")
    fn = _lambdify([flat], outputs, modules=["math"])
    return fn, iu


def compile_moment_rhs(system: MomentSystem, *, mode: str = "auto") -> CompiledMomentRHS:
    """Compile (ṁ, Σ̇) of a derived `MomentSystem` to a callable (Params, Gaussian) → arrays.

    For the Transformer system the callable evaluates

        ṁ = (A + Σ_h V_h) m + Σ_h V_h Σ B_h m + b,
        Σ̇ = A Σ + Σ Aᵀ + Σ_h (V_h Σ B_h Σ + Σ B_hᵀ Σ V_hᵀ)

    (and in general the derived ṁ = E[X], Σ̇ = E[(x − m)Xᵀ] + E[X(x − m)ᵀ]). Compiled code is
    cached per (system, mode) and, element-wise, per d (`clear_caches`).

    Parameters
    ----------
    system : MomentSystem
        The derived system (`transformer_system` or `derive_moment_equations`).
    mode : {"auto", "matrix", "elementwise"}, optional
        "matrix": numpy code from the dimension-free form, JΣ formed once and its transpose
        added; "elementwise": `lambdify(cse=True)` of the entries; "auto" (default):
        element-wise for polynomial systems with d ≤ `ELEMENTWISE_MAX_D` (or when there is no
        matrix form), matrix otherwise.

    Returns
    -------
    CompiledMomentRHS
        The callable (params, gaussian, *, K=None, ffn=None) → (ṁ (d,), Σ̇ (d, d)).

    Raises
    ------
    InvalidInputError
        If `system` is not a `MomentSystem`, mode is not one of the names above, mode="matrix"
        is asked of a system without a matrix form, or (element-wise) the equations contain
        symbols bound to neither the Params nor the Gaussian.

    See Also
    --------
    transformer_system : derives the system.
    CompiledMomentRHS : the compiled callable.
    flow : integrates the same equations with numeric Params.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    The compiled right-hand side matches the SPEC §2 formulas at a point:

    >>> import numpy as np
    >>> from riccati_tf import Gaussian, Params
    >>> from riccati_tf.symbolic import compile_moment_rhs, transformer_system
    >>> rhs = compile_moment_rhs(transformer_system(2))
    >>> A, B, V = np.array([[0.0, 1.0], [-1.0, 0.0]]), np.eye(2), 0.1 * np.eye(2)
    >>> m, S = np.array([1.0, 0.0]), np.array([[2.0, 0.5], [0.5, 1.0]])
    >>> dmean, dcov = rhs(Params(A, B=B, V=V), Gaussian(m, S))
    >>> rhs.mode, np.allclose(dmean, (A + V) @ m + V @ S @ B @ m)
    ('elementwise', True)
    >>> np.allclose(dcov, A @ S + S @ A.T + V @ S @ B @ S + S @ B.T @ S @ V.T)
    True
    """
    if not isinstance(system, MomentSystem):
        raise InvalidInputError(f"system must be a MomentSystem, got {type(system).__name__}")
    if mode not in MODES:
        raise InvalidInputError(f"mode must be one of {MODES}, got {mode!r}")
    if mode == "auto":
        polynomial = (system.options.get("kernel", "dot") == "dot"
                      and system.options.get("ffn", "affine") == "affine")
        small = system.d <= ELEMENTWISE_MAX_D and polynomial
        mode = "elementwise" if system.matrix is None or small else "matrix"
    if mode == "matrix" and system.matrix is None:
        raise InvalidInputError("this system has no matrix form; use mode='elementwise'")
    key = (system.key, mode, system.d if mode == "elementwise" else None)
    if key not in _CACHE:
        _CACHE[key] = (_compile_matrix(system) if mode == "matrix"
                       else _compile_elements(system))
    if mode == "matrix":
        fn, features = _CACHE[key]
        return CompiledMomentRHS(system, mode, fn, features=features)
    fn, iu = _CACHE[key]
    return CompiledMomentRHS(system, mode, fn, flat_index=iu)


def clear_compiled() -> None:
    """Forget every compiled right-hand side."""
    _CACHE.clear()
