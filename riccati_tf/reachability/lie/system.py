"""The moment equations as a control-affine system ż = f0(z) + Σ_i u_i g_i(z) on
z = (m, vech Σ) (SPEC §2, §4), one polynomial field over QQ per control monomial.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sympy import Matrix
from sympy.polys.domains import QQ
from sympy.polys.rings import PolyElement, ring

from ...errors import InvalidInputError, SolverError
from ...state.params import Params
from ...state.validation import as_count, as_matrix, as_vector
from .configurations import CONFIGURATIONS, PARAMETERS, Configuration, configuration
from .exact import _qq, generic_matrix, rational_array

__all__: list[str] = []  # MAX_DIMENSION is documented in riccati_tf.reachability.lie


#: the exact computations grow steeply with d (d = 5 "values-nobias" at depth 4: 15 s, 26
#: fields of ~10⁴ terms each); larger d are refused (`max_dimension` overrides per call)
MAX_DIMENSION = 5


#: a polynomial vector field on z = (m, vech Σ): its n_state components
Field = tuple[PolyElement, ...]

def state_names(d: int) -> list[str]:
    """Names of the coordinates of z = (m, vech Σ): m1, …, md, s1_1, s2_1, s2_2, …"""
    return [f"m{i + 1}" for i in range(d)] + [f"s{i + 1}_{j + 1}" for i, j in _vech_pairs(d)]


def _vech_pairs(d: int) -> list[tuple[int, int]]:
    """Pairs (i, j), i ≥ j, of vech Σ in the state z = (m, vech Σ): the row-wise lower triangle."""
    return [(i, j) for i in range(d) for j in range(i + 1)]


@lru_cache(maxsize=16)
def _state_ring(d: int) -> tuple[Any, tuple[PolyElement, ...], NDArray[np.object_],
                                 NDArray[np.object_]]:
    R, *gens = ring(",".join(state_names(d)), QQ)
    m = np.array(gens[:d], dtype=object)
    S = np.empty((d, d), dtype=object)
    for (i, j), g in zip(_vech_pairs(d), gens[d:], strict=True):
        S[i, j] = S[j, i] = g
    return R, tuple(gens), m, S


def _unit(d: int, i: int, j: int | None = None) -> NDArray[np.object_]:
    """e_i (j None) or E_ij as an object array of Python ints."""
    E = np.zeros(d if j is None else (d, d), dtype=object)
    E[i if j is None else (i, j)] = 1
    return E


@dataclass(frozen=True, eq=False)
class ControlSystem:
    """ż = f0(z) + Σ_i u_i g_i(z) on z = (m, vech Σ) for one configuration in R^d.

    names[0] = "f0" is the drift (possibly identically zero), names[i] = "g[...]" the field of the
    control monomial monomials[i] (a tuple of (parameter, index) factors; "b_2" is b[1],
    "V_12·B_21" is V[0, 1]·B[1, 0]). fields[i] holds the n_state polynomial components
    (SymPy PolyElements over QQ). fixed: the float values of the held parameters; exact_fixed the
    rationals actually used. A layer of n_heads ≥ 2 heads (`layer_system`) holds its V_h or B_h
    as an (H, d, d) stack, and each head's control is its own (index (h, k, l), name
    "g[V_12 of head 2]").
    """

    configuration: Configuration
    d: int
    names: tuple[str, ...]
    monomials: tuple[tuple[tuple[str, tuple[int, ...]], ...], ...]
    fields: tuple[tuple[PolyElement, ...], ...]
    exact_fixed: Mapping[str, NDArray[np.object_]]
    n_heads: int = 1

    @property
    def n_state(self) -> int:
        """The dimension d + d(d+1)/2 of z = (m, vech Σ)."""
        return self.d + self.d * (self.d + 1) // 2

    @property
    def fixed(self) -> dict[str, NDArray[np.float64]]:
        """The held parameters as float arrays."""
        return {k: np.array(v, dtype=float) for k, v in self.exact_fixed.items()}

    def params(self, controls: Mapping[str, NDArray[np.float64]] | None = None) -> Params:
        """The layer Params with the held parameters and the given control values (controls
        not given are 0)."""
        conf = self.configuration
        if self.n_heads > 1:
            raise InvalidInputError(f"a system of {self.n_heads} heads has no one-head Params")
        if controls is None:
            controls = {}
        if not isinstance(controls, Mapping) or any(
                not isinstance(k, str) or k not in conf.controls for k in controls):
            raise InvalidInputError(f"controls must be a mapping from the controls "
                                    f"{', '.join(conf.controls)} of configuration {conf.name!r} "
                                    f"to values, got {controls!r:.80}")
        d = self.d
        zeros = {p: np.zeros(d) if p == "b" else np.zeros((d, d)) for p in conf.controls}
        vals = {**self.fixed, **zeros, **controls}
        return Params(vals["A"], B=vals["B"], V=vals["V"], b=vals["b"])

    def monomial_values(self, params: Params) -> NDArray[np.float64]:
        """u_i = the control monomials at params (u_0 = 1 for the drift); one head only."""
        if (not isinstance(params, Params) or params.d != self.d or params.B is None
                or self.n_heads > 1):
            raise InvalidInputError(f"params must be a one-head riccati_tf.Params on "
                                    f"R^{self.d}, got {params!r:.80}")
        V, b = params.V, params.b
        assert V is not None and b is not None  # a one-head Params carries V (with B) and b
        blocks = {"A": params.A, "B": params.B, "V": V, "b": b}
        with np.errstate(over="ignore"):
            out = np.array([np.prod([blocks[p][idx] for p, idx in mono]) if mono else 1.0
                            for mono in self.monomials])
        if not np.all(np.isfinite(out)):
            raise SolverError("a control monomial (a product V_kl·B_ij) overflows float64")
        return out

    def evaluate(self, z: ArrayLike) -> NDArray[np.object_]:
        """Exact values of every field at the state z = (m, vech Σ) (ints and Fractions exactly,
        floats by `rational`): an (n_fields, n_state) object array of QQ numbers."""
        point = [_qq(x) for x in rational_array("z", z, as_vector("z", z, self.n_state))]
        return np.array([[_eval(p, point) for p in f] for f in self.fields], dtype=object)

    def as_sympy(self) -> list[Matrix]:
        """The fields as SymPy column matrices in the symbols m1.., s1_1.. (for display)."""
        return [Matrix([p.as_expr() for p in f]) for f in self.fields]


def _eval(p: PolyElement, point: Sequence[Any]) -> Any:
    return p(*point) if p else QQ(0)


def _fixed_values(conf: Configuration, d: int,
                  fixed: Mapping[str, ArrayLike] | None) -> dict[str, NDArray[np.object_] | None]:
    """The held parameters as exact rationals: `fixed` (None or a mapping from the non-control
    parameter names to values), the configuration's tied defaults, zeros for the rest."""
    allowed = [p for p in PARAMETERS if p not in conf.controls]
    if fixed is None:
        fixed = {}
    if not isinstance(fixed, Mapping):
        raise InvalidInputError(f"fixed must be None or a mapping from parameter names "
                                f"({', '.join(allowed)} for controls {conf.name!r}) to values, "
                                f"got {fixed!r:.40} (a {type(fixed).__name__})")
    for key in fixed:
        if key in conf.controls:
            raise InvalidInputError(f"fixed[{key!r}]: {key} is a control of configuration "
                                    f"{conf.name!r} and cannot be held fixed; the parameters "
                                    f"that can be held are {', '.join(allowed)}")
        if not isinstance(key, str) or key not in PARAMETERS:
            raise InvalidInputError(f"fixed has an unknown parameter {key!r}; the parameters "
                                    f"that can be held with controls {conf.name!r} are "
                                    f"{', '.join(allowed)}")
    out: dict[str, NDArray[np.object_] | None] = {}
    for p in PARAMETERS:
        if p in conf.controls:
            out[p] = None
        elif p in fixed:
            name = f"fixed['{p}']"
            val = (as_vector(name, fixed[p], d) if p == "b" else as_matrix(name, fixed[p], d))
            out[p] = rational_array(name, fixed[p], val)
        elif p in conf.tied:
            out[p] = generic_matrix(d, p)
        else:
            out[p] = rational_array(p, np.zeros(d) if p == "b" else np.zeros((d, d)))
    return out


def _dimension(d: int, max_dimension: int) -> int:
    d = as_count("d", d)
    limit = as_count("max_dimension", max_dimension)
    if d > limit:
        raise InvalidInputError(f"d = {d} exceeds max_dimension = {limit}: the exact bracket "
                                f"computation grows steeply with d (see lie.MAX_DIMENSION); "
                                f"pass max_dimension={d} to run it anyway")
    return d


def _lift(R: Any, arr: NDArray[np.object_]) -> NDArray[np.object_]:
    return np.vectorize(lambda x: R(_qq(x)), otypes=[object])(arr)


@lru_cache(maxsize=64)
def _cached_system(name: str, d: int,
                   fixed_key: tuple[tuple[str, tuple[Any, ...], tuple[int, ...]], ...]
                   ) -> ControlSystem:
    conf = CONFIGURATIONS[name]
    fixed = {k: np.array(v, dtype=object).reshape(shape) for k, v, shape in fixed_key}
    R, _, m, S = _state_ring(d)
    pairs = _vech_pairs(d)
    zero_v = np.array([R.zero] * d, dtype=object)
    zero_m = np.array([[R.zero] * d for _ in range(d)], dtype=object)

    def field(mean_part: NDArray[np.object_], cov_part: NDArray[np.object_]) -> Field:
        return tuple(mean_part) + tuple(cov_part[i, j] for i, j in pairs)

    def t_A(A):  # (A m, A Σ + Σ Aᵀ)
        AS = A @ S
        return A @ m, AS + AS.T

    def t_V(V):  # (V m, 0)
        return V @ m, zero_m

    def t_VB(V, B):  # (V Σ B m, V Σ B Σ + Σ Bᵀ Σ Vᵀ)
        VS = V @ S
        W = VS @ (B @ S)
        return VS @ (B @ m), W + W.T

    def add(*terms):
        return (sum((t[0] for t in terms), zero_v), sum((t[1] for t in terms), zero_m))

    held = {p: _lift(R, v) for p, v in fixed.items() if v is not None}
    # the held V_h and B_h per head: a (d, d) matrix is one head, an (H, d, d) stack H heads
    stacks = {p: list(held[p]) if held[p].ndim == 3 else [held[p]] for p in "VB" if p in held}
    n_heads = max((len(v) for v in stacks.values()), default=1)
    heads = [tuple(stacks[p][h] if p in stacks else None for p in "VB") for h in range(n_heads)]
    drift = [t_A(held["A"])] if "A" in held else []
    for Vh, Bh in heads:
        if Vh is not None:
            drift.append(t_V(Vh))
            if Bh is not None:
                drift.append(t_VB(Vh, Bh))
    if "b" in held:
        drift.append((held["b"], zero_m))
    names, monos, fields = ["f0"], [()], [field(*add(*drift))]

    def push(name, mono, parts):
        f = field(*parts)
        if any(f):
            names.append(name), monos.append(mono), fields.append(f)

    units = [(i, j) for i in range(d) for j in range(d)]
    one = R.one
    if "A" in conf.controls:
        for i, j in units:
            push(f"g[A_{i + 1}{j + 1}]", (("A", (i, j)),), t_A(_unit(d, i, j) * one))
    if "b" in conf.controls:
        for i in range(d):
            push(f"g[b_{i + 1}]", (("b", (i,)),), (_unit(d, i) * one, zero_m))
    def own(p, h, ij):  # the name and monomial of head h's control entry p_ij
        tail = f" of head {h + 1}" if n_heads > 1 else ""
        index = (h, *ij) if n_heads > 1 else ij
        return f"{p}_{ij[0] + 1}{ij[1] + 1}{tail}", ((p, index),)

    if "V" in conf.controls and "B" in conf.controls:  # every head spans the same fields
        for k, l in units:
            E = _unit(d, k, l) * one
            push(f"g[V_{k + 1}{l + 1}]", (("V", (k, l)),), t_V(E))
            for i, j in units:
                push(f"g[V_{k + 1}{l + 1}·B_{i + 1}{j + 1}]", (("V", (k, l)), ("B", (i, j))),
                     t_VB(E, _unit(d, i, j) * one))
    elif "V" in conf.controls:
        for h, (_, Bh) in enumerate(heads):
            for k, l in units:
                E = _unit(d, k, l) * one
                name, mono = own("V", h, (k, l))
                push(f"g[{name}]", mono, add(t_V(E), t_VB(E, Bh)))
    elif "B" in conf.controls:
        for h, (Vh, _) in enumerate(heads):
            for i, j in units:
                name, mono = own("B", h, (i, j))
                push(f"g[{name}]", mono, t_VB(Vh, _unit(d, i, j) * one))
    exact_fixed = {k: v for k, v in fixed.items() if v is not None}
    return ControlSystem(conf, d, tuple(names), tuple(monos), tuple(fields), exact_fixed,
                         n_heads)


def control_system(controls: str | Configuration, d: int, *,
                   fixed: Mapping[str, ArrayLike] | None = None,
                   max_dimension: int = MAX_DIMENSION) -> ControlSystem:
    """The control-affine form ż = f0(z) + Σ u_i g_i(z) of the moment equations (SPEC §2) for the
    configuration `controls` in R^d (1 ≤ d ≤ max_dimension, see MAX_DIMENSION); `fixed`
    overrides held parameters (tied ones default to `generic_matrix(d, name)`, the others to 0).
    Built once per (configuration, d, fixed)."""
    conf = configuration(controls)
    d = _dimension(d, max_dimension)
    vals = _fixed_values(conf, d, fixed)
    key = tuple((k, tuple(v.ravel().tolist()), v.shape) for k, v in vals.items() if v is not None)
    return _cached_system(conf.name, d, key)


def layer_system(controls: str | Configuration, params: Params, *,
                 max_dimension: int = MAX_DIMENSION) -> ControlSystem:
    """The control system of configuration `controls` around the layer `params`: the controls
    move, every other parameter is held at the layer's value — A, b, and each head's V_h or
    B_h — so that with H heads the drift is f0 = (Am + Σ_h (V_h m + V_hΣB_h m) + b,
    AΣ + ΣAᵀ + Σ_h (V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ)) over the held terms, and each head's moving matrix
    is its own control: "values" has the fields (E_kl m + E_klΣB_h m, E_klΣB_hΣ + ΣB_hᵀΣE_lk)
    of every head h, "attention" (V_hΣE_ij m, V_hΣE_ijΣ + ΣE_jiΣV_hᵀ). Where V and B both
    move every head spans the same fields as one head. One head: `control_system` with
    fixed = the layer's held parameters."""
    conf = configuration(controls)
    if not isinstance(params, Params):
        raise InvalidInputError(f"params must be a riccati_tf Params, got "
                                f"{type(params).__name__}")
    d = _dimension(params.d, max_dimension)
    stack = {p: np.array([pair[i] for pair in params.heads]) for i, p in enumerate("VB")}
    layer = {"A": params.A, "b": params.b,
             **{p: v[0] if len(v) == 1 else v for p, v in stack.items()}}
    held = {p: v for p, v in layer.items() if p not in conf.controls}
    key = tuple((p, tuple(rational_array(p, v).ravel().tolist()), v.shape) for p, v in held.items())
    return _cached_system(conf.name, d, key)
