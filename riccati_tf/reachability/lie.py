"""Accessibility of the Gaussian moment system by Lie brackets (SPEC §3–§4).

    ż = f0(z) + Σ_i u_i g_i(z),   z = (m, vech Σ),   [f, g](z) = Dg(z) f(z) − Df(z) g(z)

The moment equations ṁ = (A + V)m + VΣBm + b, Σ̇ = AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ are polynomial in
the layer parameters. A *configuration* says which parameters are controls (free at every depth)
and which are held at given values; every monomial in the controls contributes one vector field
g_i (for "full" the products V_kl B_ij are monomials of their own, so the family
{F(·, u) : u} and {f0, g_i} generate the same Lie algebra), and the rest is the drift f0.

The fields are polynomials with rational coefficients in SymPy's sparse ring over QQ, so brackets
are exact and the rank of their span at a rational point is exact (elimination over QQ). For a
rank-r covariance the fields are tangent to the stratum {rank Σ = r}, so the rank of the span is
at most the state dimension d + r d − r(r−1)/2 (SPEC §3), with equality when the Lie-algebra rank
condition holds. Brackets are generated right-normed ([X_1, [X_2, [..., X_k]]] with X_i
generators span the Lie algebra), level by level up to `depth`; a bracket identically (as a
polynomial field) dependent on those already kept is dropped with all its extensions, which is
exact. The rank found is a lower bound of the Lie-algebra rank that is exact once it reaches the
stratum dimension.

By Nagano's theorem (analytic fields) the Lie-algebra rank is constant along an orbit, which
contains every reachable set: two points of different rank cannot be connected by any control.

Run `python -m riccati_tf.reachability.lie --table --out docs/accessibility.md` to regenerate
the table of ranks against stratum dimensions.
"""

from __future__ import annotations

import argparse
import math
import numbers
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any, TypeGuard

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sympy import Matrix
from sympy.polys.domains import QQ
from sympy.polys.rings import PolyElement, ring

from ..errors import InvalidInputError, SolverError
from ..state.params import Gaussian, Params
from ..state.validation import (
    as_array,
    as_count,
    as_covariance,
    as_matrix,
    as_real,
    as_seed,
    as_vector,
    psd_rank,
    scale_exponent,
)

__all__ = [
    "CONFIGURATIONS",
    "DEFAULT_DEPTH",
    "MAX_DEPTH",
    "MAX_DIMENSION",
    "MAX_TABLE_ROWS",
    "MAX_TABLE_WORK",
    "MAX_WORK",
    "Accessibility",
    "Configuration",
    "accessibility_rank",
    "accessibility_table",
    "stratum_dimension",
]

#: the layer parameters of SPEC §1, in the order used for monomial names
PARAMETERS = ("A", "B", "V", "b")
#: a float x = y·2^k (y ∈ [1/2, 1)) is read as (p/q)·2^k, p/q the nearest rational to y with
#: q ≤ RATIONAL_DENOMINATOR (relative change ≲ 1/q², so tiny entries stay nonzero); integers,
#: ints and Fractions are read exactly
RATIONAL_DENOMINATOR = 10**12
#: default bracket depth (length of the longest word)
DEFAULT_DEPTH = 4
#: the exact computations grow steeply with d (d = 5 "values-nobias" at depth 4: 15 s, 26
#: fields of ~10⁴ terms each); larger d are refused (`max_dimension` overrides per call)
MAX_DIMENSION = 5
#: the deepest bracket length accepted
MAX_DEPTH = 12
#: work budget of one rank computation, in units of one product of two polynomial terms or one
#: elimination step, times 1 + (bits of the point's largest rational)/64 (a unit is 3–10 µs;
#: the generated table's costliest row, "attention-nobias" d = 3 r = 1, takes 2.6·10⁶);
#: spending it raises SolverError (`max_work` overrides)
MAX_WORK = 5_000_000
#: the most rows one `accessibility_table` call computes (`max_rows` overrides), and its work
#: budget (`max_work` overrides; the generated table for d = 1, 2, 3 takes 5.4·10⁶)
MAX_TABLE_ROWS = 200
MAX_TABLE_WORK = 20_000_000


@dataclass(frozen=True)
class Configuration:
    """Which layer parameters are controls, which are held fixed, which are zero.

    The moment equations ṁ = (A + V)m + VΣBm + b, Σ̇ = AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ become the
    control-affine system ż = f0(z) + Σ_i u_i g_i(z) once the controls are chosen: every
    monomial in the controls gives one field g_i, the held parameters make the drift f0. The
    registered configurations are in `CONFIGURATIONS` ("affine", "attention", "values", "full"
    and their "-nobias" variants).

    Parameters
    ----------
    name : str
        The name in `CONFIGURATIONS`.
    controls : tuple of str
        Parameters among "A", "B", "V", "b" free at every depth (time-varying).
    tied : tuple of str
        Parameters constant in depth, given by the caller or, by default, a fixed generic
        matrix (`generic_matrix`); every other parameter is zero unless the caller fixes it
        (e.g. a frozen feed-forward A as a drift).
    summary : str
        One line saying what the configuration is.

    Raises
    ------
    None
        The registered configurations are built once; functions taking a configuration
        refuse one not registered (InvalidInputError).

    See Also
    --------
    accessibility_rank : the Lie-algebra rank of a configuration.
    steer : steering with a configuration's controls.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §3 "Rank invariance".
    .. [2] riccati_tf theory, SPEC §4 "Reachability (time-varying controls)".
    .. [3] V. Jurdjevic, "Geometric Control Theory", Cambridge University Press, 1997.

    Examples
    --------
    >>> from riccati_tf.reachability.lie import CONFIGURATIONS
    >>> conf = CONFIGURATIONS["attention"]
    >>> conf.controls, conf.tied, conf.has_bias
    (('B', 'b'), ('V',), True)
    """

    name: str
    controls: tuple[str, ...]
    tied: tuple[str, ...]
    summary: str

    @property
    def has_bias(self) -> bool:
        """Whether the bias b is a control."""
        return "b" in self.controls


def _registry() -> dict[str, Configuration]:
    base = {
        "affine": (("A", "b"), (), "feed-forward A and bias b; no attention (V = B = 0)"),
        "attention": (("B", "b"), ("V",), "query–key B and bias b; value V fixed in depth; A = 0"),
        "values": (("V", "b"), ("B",), "value V and bias b; query–key B fixed in depth; A = 0"),
        "full": (("A", "B", "V", "b"), (), "every parameter A, B, V, b"),
    }
    out = {}
    for name, (controls, tied, summary) in base.items():
        out[name] = Configuration(name, controls, tied, summary)
        out[f"{name}-nobias"] = Configuration(f"{name}-nobias",
                                              tuple(p for p in controls if p != "b"), tied,
                                              summary.replace(" and bias b", "") + "; b = 0")
    return out


#: the named control configurations: "affine", "attention", "values", "full" and "<name>-nobias"
CONFIGURATIONS: dict[str, Configuration] = _registry()


def configuration(name: str | Configuration) -> Configuration:
    """The registered configuration called `name` (InvalidInputError listing the names if none)."""
    if isinstance(name, Configuration):
        if CONFIGURATIONS.get(name.name) != name:
            raise InvalidInputError(f"controls: the Configuration {name.name!r} is not one of "
                                    f"the registered {', '.join(CONFIGURATIONS)}")
        return CONFIGURATIONS[name.name]
    if not isinstance(name, str) or name not in CONFIGURATIONS:
        raise InvalidInputError(f"controls must be one of {', '.join(CONFIGURATIONS)}; "
                                f"got {name!r}")
    return CONFIGURATIONS[name]


def stratum_dimension(d: int, r: int) -> int:
    """Dimension d + r d − r(r−1)/2 of the state manifold {(m, Σ) : rank Σ = r} (SPEC §3).

    The rank of Σ(t) = Φ(t) Σ0 Φ(t)ᵀ is invariant, so the moments move on the stratum of rank
    r, of dimension d (the mean) + r d − r(r−1)/2 (the covariance); full accessibility rank
    means rank = this dimension.

    Parameters
    ----------
    d : int
        The dimension, d ≥ 1.
    r : int
        The covariance rank, 0 ≤ r ≤ d.

    Returns
    -------
    int
        d + r d − r(r−1)/2.

    Raises
    ------
    InvalidInputError
        If d is not a positive integer or r is not an integer in [0, d].

    See Also
    --------
    accessibility_rank : compares the Lie-algebra rank with this dimension.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §3 "Rank invariance".
    .. [2] riccati_tf theory, SPEC §4 "Reachability (time-varying controls)".
    .. [3] V. Jurdjevic, "Geometric Control Theory", Cambridge University Press, 1997.

    Examples
    --------
    >>> from riccati_tf.reachability.lie import stratum_dimension
    >>> stratum_dimension(3, 3), stratum_dimension(3, 1), stratum_dimension(3, 0)
    (9, 6, 3)
    """
    d = as_count("d", d)
    r = _rank(r, d)
    return d + r * d - r * (r - 1) // 2


# --------------------------------------------------------------------------- exact arithmetic

#: exact rational scalar types: Fractions, ints (not bools) and the ground field QQ of the rings
_EXACT = (Fraction, numbers.Integral, type(QQ(1, 2)))


def _is_exact(x: object) -> TypeGuard[numbers.Rational]:
    """True for exact rationals: ints (not bools), Fractions and QQ numbers."""
    return isinstance(x, _EXACT) and not isinstance(x, bool | np.bool_)


def rational(x: object) -> Fraction:
    """x as a rational: ints and Fractions exactly; any other real (validated as a finite
    float64) as (p/q)·2^k with y = x·2^−k ∈ [1/2, 1) read as the nearest p/q, q ≤
    RATIONAL_DENOMINATOR (a relative change ≲ 1e-24, so subnormal entries stay nonzero)."""
    if _is_exact(x):
        return Fraction(int(x)) if isinstance(x, numbers.Integral) else Fraction(
            int(x.numerator), int(x.denominator))
    f = as_real("value", x)
    if f.is_integer():
        return Fraction(int(f))
    y, k = math.frexp(f)
    return Fraction(y).limit_denominator(RATIONAL_DENOMINATOR) * Fraction(2) ** k


def _qq(x: object) -> Any:
    x = rational(x)
    return QQ(x.numerator, x.denominator)


def rational_array(name: str, value: ArrayLike,
                   validated: NDArray[np.float64] | None = None) -> NDArray[np.object_]:
    """`value` as an object array of Fractions, of the shape of `validated` (its float64 reading
    by `state.validation`, `as_array(name, value)` when not given). Arrays and lists whose
    entries are all ints or Fractions are kept exactly; otherwise every float64 entry is read
    by `rational`."""
    arr = as_array(name, value) if validated is None else validated
    if isinstance(value, (list, tuple, np.ndarray, *_EXACT)):
        obj = np.array(value, dtype=object)
        if obj.size == arr.size and all(_is_exact(x) for x in obj.flat):
            return np.vectorize(rational, otypes=[object])(obj).reshape(arr.shape)
    return np.vectorize(rational, otypes=[object])(arr)


def exact_rank(rows: Sequence[Sequence[object]]) -> int:
    """Rank over QQ of a list of rational vectors."""
    ech = _Echelon()
    return sum(ech.add({i: _qq(x) for i, x in enumerate(row) if x != 0}) for row in rows)


class _Echelon:
    """Incremental row echelon form over QQ of sparse vectors {key: value}.

    Each stored row has a pivot key absent from every row stored before it, so reducing a new
    vector against the rows in insertion order leaves no pivot key in it.
    """

    def __init__(self, budget: _Budget | None = None) -> None:
        self.rows: list[tuple[object, dict[Any, Any]]] = []
        self.budget = budget

    def reduce(self, vec: dict[Any, Any]) -> dict[Any, Any]:
        vec = dict(vec)
        for key, row in self.rows:
            c = vec.get(key)
            if c:
                if self.budget:
                    self.budget.charge(len(row))
                for k, v in row.items():
                    w = vec.get(k, 0) - c * v
                    if w:
                        vec[k] = w
                    else:
                        vec.pop(k, None)
        return vec

    def add(self, vec: dict[Any, Any]) -> bool:
        """Add vec; True when it was independent of the rows already stored."""
        vec = self.reduce(vec)
        if not vec:
            return False
        key = min(vec)
        piv = vec[key]
        self.rows.append((key, {k: v / piv for k, v in vec.items()}))
        return True


def generic_matrix(d: int, name: str) -> NDArray[np.object_]:
    """A fixed 'generic' rational d×d matrix I + N/4, N with entries in {−2, …, 2}, drawn from a
    seed made of d ≤ 100 and name (reproducible; invertible by construction check)."""
    d = as_count("d", d, maximum=100)
    if not isinstance(name, str):
        raise InvalidInputError(f"name must be a string, got {type(name).__name__}")
    rng = np.random.default_rng([d, *name.encode()])
    while True:
        N = rng.integers(-2, 3, size=(d, d))
        M = np.array([[Fraction(int(N[i, j]), 4) + (i == j) for j in range(d)] for i in range(d)],
                     dtype=object)
        if exact_rank(M.tolist()) == d:
            return M


# --------------------------------------------------------------------------- the control system

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


# --------------------------------------------------------------------------- brackets

def _jacobian(field: Field, gens: Sequence[PolyElement]) -> list[list[PolyElement]]:
    return [[p.diff(x) for x in gens] for p in field]


class _Budget:
    """Work units left (term products and eliminations, each weighted by `weight`, the size of
    the rational numbers in 64-bit words); SolverError when spent."""

    def __init__(self, limit: int, weight: int = 1) -> None:
        self.limit = self.left = limit
        self.weight = weight

    def charge(self, units: int) -> None:
        self.left -= units * self.weight
        if self.left < 0:
            raise SolverError(f"the bracket computation spent its work budget max_work = "
                              f"{self.limit} (term products and eliminations) without "
                              f"finishing; lower depth or pass a larger max_work")

    @property
    def spent(self) -> int:
        return self.limit - self.left


def lie_bracket(f: Field, g: Field, gens: Sequence[PolyElement], order: int | None = None, *,
                budget: _Budget | None = None) -> Field:
    """[f, g](z) = Dg(z) f(z) − Df(z) g(z) for polynomial fields given componentwise
    (terms of total degree above `order` dropped when it is given); every product of two
    polynomials is charged len·len units to `budget` when one is given."""
    Dg, Df = _jacobian(g, gens), _jacobian(f, gens)
    R = (f[0] if f else g[0]).ring
    out = []
    for k in range(len(f)):
        acc = R.zero
        for j in range(len(f)):
            if f[j] and Dg[k][j]:
                if budget:
                    budget.charge(len(Dg[k][j]) * len(f[j]))
                acc += Dg[k][j] * f[j]
            if g[j] and Df[k][j]:
                if budget:
                    budget.charge(len(Df[k][j]) * len(g[j]))
                acc -= Df[k][j] * g[j]
        out.append(acc)
    return tuple(out) if order is None else _truncate(tuple(out), order)


def _truncate(field: Field, order: int) -> Field:
    """The field's terms of total degree ≤ order."""
    return tuple(p.ring.from_dict({m: c for m, c in p.items() if sum(m) <= order})
                 for p in field)


def _shift(field: Field, z: Sequence[Any]) -> Field:
    """The field in the coordinates w = z − z0: each component p(z0 + w)."""
    gens = field[0].ring.gens
    subs = [(g, g + c) for g, c in zip(gens, z, strict=True) if c]
    return tuple(p.compose(subs) if p and subs else p for p in field)


def _float_rows(rows: Sequence[Sequence[Any]], n: int) -> NDArray[np.float64]:
    """Rational rows as floats; a row with an entry beyond the float64 range (a point of size
    ~1e300 makes quadratic fields ~1e600) is first divided by a power of two."""
    out = np.zeros((len(rows), n))
    for i, row in enumerate(rows):
        row = [rational(x) for x in row]
        top = max(abs(x) for x in row)
        k = max(top.numerator.bit_length() - top.denominator.bit_length() - 1000, 0)
        out[i] = [float(x / 2**k) for x in row]
    return out


def _field_coefficients(field: Field) -> dict[tuple[int, tuple[int, ...]], Any]:
    return {(k, mono): c for k, p in enumerate(field) for mono, c in p.items()}


# --------------------------------------------------------------------------- points

def _random_rational(rng: np.random.Generator, shape: tuple[int, ...]) -> NDArray[np.object_]:
    """Entries ±k/l with k ∈ {1, …, 6}, l ∈ {1, 2, 3} (never 0: zeros make points special)."""
    num = rng.integers(1, 7, size=shape) * rng.choice([-1, 1], size=shape)
    den = rng.integers(1, 4, size=shape)
    return np.vectorize(lambda a, b: Fraction(int(a), int(b)), otypes=[object])(num, den)


def stratum_point(d: int, r: int,
                  seed: int = 0) -> tuple[NDArray[np.object_], NDArray[np.object_]]:
    """A random rational point (m, Σ = L Lᵀ) with rank Σ = r exactly (L rational d×r), drawn
    from seed."""
    d = as_count("d", d)
    r = _rank(r, d)
    rng = np.random.default_rng([as_seed("seed", seed), d, r])
    mean = _random_rational(rng, (d,))
    while True:
        L = _random_rational(rng, (d, r))
        if exact_rank(L.T.tolist()) == r:
            return mean, L @ L.T if r else np.array([[Fraction(0)] * d] * d, dtype=object)


def _rank(r: int, d: int) -> int:
    r = as_count("rank", r, minimum=0)
    if r > d:
        raise InvalidInputError(f"rank must be ≤ d = {d}, got {r}")
    return r


def rational_point(point: Gaussian | Sequence[ArrayLike], d: int, rank: int | None = None
                   ) -> tuple[NDArray[np.object_], NDArray[np.object_], int]:
    """(m, Σ, r) as exact rationals from a Gaussian or a (mean, cov) pair.

    mean and cov are validated by `state.validation` (a vector of length d, a symmetric PSD
    d×d matrix); arrays of ints and Fractions are kept exactly (Σ symmetrised exactly), other
    entries read by `rational`. If that changes the rank (a float covariance of rank r is rarely
    of exact rank r), Σ is rebuilt as L Lᵀ from a rationalised eigen-factor L (d×r), so the point
    lies exactly on the stratum of the numerical rank r (eigenvalues above d·1e-12·max|Σ_ij|), or
    of `rank` when given (the largest `rank` eigenvalues are kept). Eigenvalues are computed on
    Σ scaled by a power of 4, so the rank and the factor are the same at every magnitude.
    """
    mean: ArrayLike
    cov: ArrayLike
    if isinstance(point, Gaussian):
        mean, cov = point.mean, point.cov
    else:
        if isinstance(point, str | bytes | Mapping | np.ndarray) or not isinstance(
                point, Sequence) or len(point) != 2:
            raise InvalidInputError("point must be a Gaussian or a pair (mean, cov)")
        mean, cov = point
    d = as_count("d", d)
    cov_f = as_covariance("cov", cov, d)
    mean_exact = rational_array("mean", mean, as_vector("mean", mean, d))
    cov_exact = rational_array("cov", cov, cov_f)
    cov_exact = (cov_exact + cov_exact.T) / 2
    r = psd_rank(cov_f, d * 1e-12 * float(np.max(np.abs(cov_f))))
    if rank is not None:
        r = _rank(rank, d)
    if exact_rank(cov_exact.tolist()) != r:
        e = scale_exponent(cov_f, even=True)
        eig, vec = np.linalg.eigh(np.ldexp(cov_f, -e))
        L = np.ldexp(vec[:, d - r:] * np.sqrt(np.clip(eig[d - r:], 0, None)), e // 2)
        L = rational_array("cov factor", L)
        cov_exact = L @ L.T if r else cov_exact * 0
    return mean_exact, cov_exact, r


# --------------------------------------------------------------------------- accessibility

@dataclass(frozen=True, eq=False)
class Accessibility:
    """Rank of the Lie algebra generated by {f0, g_i} at a point, against the stratum dimension.

    For ż = f0(z) + Σ_i u_i g_i(z), z = (m, vech Σ), the rank of span{[X_1, [X_2, …, X_k]](z0)}
    is compared with the dimension d + r d − r(r−1)/2 of the stratum {rank Σ = r}: equality
    (`full`) is the Lie-algebra rank condition. `explain()` says what the rank means.

    Parameters
    ----------
    controls : str
        The configuration's name.
    d : int
        The dimension.
    cov_rank : int
        r = rank Σ at the point.
    rank : int
        dim span{brackets up to `depth`}(z0), exact over QQ.
    expected : int
        d + r d − r(r−1)/2.
    mean_rank : int
        The rank of the span's mean components.
    depth : int
        The deepest bracket length explored.
    depth_reached : int
        The length of the longest word needed.
    words : tuple of str
        Brackets whose values at z0 form a basis of the span.
    n_fields : int
        The number of (identically independent) brackets examined.
    mean : (d,) ndarray
        The point's mean (floats of the exact rationals used).
    cov : (d, d) ndarray
        The point's covariance (floats of the exact rationals used).
    fixed : mapping of str to ndarray
        The held parameters.
    has_bias : bool
        Whether b is a control or held nonzero.
    basis : (rank, n_state) ndarray
        The values of `words` at z0 in the coordinates z = (m, vech Σ) of `lie.state_names`
        (a row beyond the float64 range divided by a power of two).
    work : int, optional
        The work spent (units of `MAX_WORK`).

    Raises
    ------
    None
        Built by `accessibility_rank`.

    See Also
    --------
    accessibility_rank : computes it.
    accessibility_table : one per configuration, dimension and rank.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §3 "Rank invariance".
    .. [2] riccati_tf theory, SPEC §4 "Reachability (time-varying controls)".
    .. [3] V. Jurdjevic, "Geometric Control Theory", Cambridge University Press, 1997.

    Examples
    --------
    Without a bias the "affine" orbits at Σ ≻ 0 keep mᵀΣ⁻¹m, so one direction is missing:

    >>> from riccati_tf.reachability.lie import accessibility_rank
    >>> acc = accessibility_rank("affine-nobias", 2)
    >>> acc.rank, acc.expected, acc.full
    (4, 5, False)
    """

    controls: str
    d: int
    cov_rank: int
    rank: int
    expected: int
    mean_rank: int
    depth: int
    depth_reached: int
    words: tuple[str, ...]
    n_fields: int
    mean: np.ndarray
    cov: np.ndarray
    fixed: Mapping[str, np.ndarray]
    has_bias: bool
    basis: np.ndarray
    work: int = 0

    @property
    def full(self) -> bool:
        """The Lie-algebra rank condition: rank equals the stratum dimension."""
        return self.rank == self.expected

    def explain(self) -> str:
        """One paragraph saying what the rank means."""
        where = (f"at N(m, Σ) with rank Σ = {self.cov_rank} in R^{self.d} (state manifold of "
                 f"dimension {self.expected} = d + r d − r(r−1)/2)")
        if self.full:
            return (f"configuration {self.controls!r}: the brackets up to depth "
                    f"{self.depth_reached} span all {self.expected} directions {where}; the "
                    f"Lie-algebra rank condition holds, so the reachable sets have interior.")
        text = (f"configuration {self.controls!r}: brackets up to depth {self.depth} span only "
                f"{self.rank} of the {self.expected} directions {where}")
        if self.mean_rank == 0 and not np.any(self.mean) and not self.has_bias:
            text += ("; every bracket has a zero mean component there: without a bias the mean "
                     "obeys ṁ = (A + V + VΣB) m, linear in m, so m = 0 is invariant and the mean "
                     "can never leave 0")
        elif self.mean_rank < self.d:
            text += f"; the mean directions are reached in only {self.mean_rank} of {self.d}"
        return text + (". The orbit through this point (which contains everything reachable "
                       "from it) has at most that lower dimension, so targets off it are "
                       "unreachable.")


def accessibility_rank(controls: str | Configuration | ControlSystem, d: int,
                       point: Gaussian | Sequence[ArrayLike] | None = None,
                       depth: int = DEFAULT_DEPTH, *,
                       rank: int | None = None, fixed: Mapping[str, ArrayLike] | None = None,
                       seed: int = 0, max_work: int = MAX_WORK,
                       max_dimension: int = MAX_DIMENSION) -> Accessibility:
    """Rank of span{[X_1, [X_2, …, X_k]](z0) : k ≤ depth, X_i ∈ {f0, g_1, …}} for the system
    ż = f0(z) + Σ u_i g_i(z) of configuration `controls` in R^d (exact rational arithmetic).

    The moment equations ṁ = (A + V)m + VΣBm + b, Σ̇ = AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ are written
    on z = (m, vech Σ) with one field per control monomial; brackets
    [f, g](z) = Dg(z) f(z) − Df(z) g(z) are generated right-normed, level by level, as
    polynomials over QQ (jets at z0 truncated to the order still needed), a bracket dependent on
    those kept being dropped with its extensions (exact). The rank found is a lower bound of the
    Lie-algebra rank, exact once it reaches the stratum dimension d + r d − r(r−1)/2, where the
    computation stops. By Nagano's theorem the rank is constant along orbits, which contain the
    reachable sets.

    Parameters
    ----------
    controls : str, Configuration or ControlSystem
        A configuration of `CONFIGURATIONS` (by name), or a control system already built by
        `control_system`.
    d : int
        The dimension, 1 ≤ d ≤ max_dimension.
    point : Gaussian or (mean, cov) pair, optional
        z0, read as exact rationals on the stratum of its numerical rank (or of `rank` when
        given; see `rational_point`): ints and Fractions exactly, floats as nearby rationals.
        None (default) draws a random rational point on the stratum of rank `rank`, which gives
        the generic rank with probability one.
    depth : int, optional
        The longest bracket, 1 ≤ depth ≤ `MAX_DEPTH` (default `DEFAULT_DEPTH`).
    rank : int, optional
        The covariance rank r (default: the point's numerical rank, or d for a random point).
    fixed : mapping of str to array_like, optional
        Held parameters: (d, d) matrices for "A", "B", "V", a (d,) vector for "b" (see
        `control_system`; tied ones default to `generic_matrix(d, name)`, the others to 0).
    seed : int, optional
        Picks the random point (≥ 0; default 0).
    max_work : int, optional
        The work budget (default `MAX_WORK`).
    max_dimension : int, optional
        The largest d accepted (default `MAX_DIMENSION`).

    Returns
    -------
    Accessibility
        The rank, the stratum dimension, the basis words and their values at z0.

    Raises
    ------
    InvalidInputError
        If controls is not a registered configuration, d exceeds max_dimension, `fixed` is
        given with a ControlSystem or names a control or an unknown parameter, a ControlSystem
        acts on another dimension, depth, seed, max_work or rank is out of range, or the point
        is not a Gaussian or a (mean, cov) pair of a length-d mean and a symmetric positive
        semidefinite d × d covariance with finite entries.
    SolverError
        If the work budget is spent.

    See Also
    --------
    accessibility_table : the ranks of every configuration on every stratum.
    stratum_dimension : the dimension compared with.
    steer : steers between Gaussians (the shooting route runs this test first).

    References
    ----------
    .. [1] riccati_tf theory, SPEC §3 "Rank invariance".
    .. [2] riccati_tf theory, SPEC §4 "Reachability (time-varying controls)".
    .. [3] V. Jurdjevic, "Geometric Control Theory", Cambridge University Press, 1997.

    Examples
    --------
    The affine controls satisfy the rank condition; in d = 1 the value matrix alone (B held,
    no bias) has the single field g[V_11]:

    >>> from riccati_tf.reachability.lie import accessibility_rank
    >>> acc = accessibility_rank("affine", 2)
    >>> acc.rank, acc.expected, acc.full
    (5, 5, True)
    >>> acc = accessibility_rank("values-nobias", 1)
    >>> acc.rank, acc.expected, acc.words
    (1, 2, ('g[V_11]',))
    """
    if isinstance(controls, ControlSystem) and fixed is not None:
        raise InvalidInputError("fixed applies to a configuration name; a ControlSystem already "
                                "holds its fixed parameters")
    d = _dimension(d, max_dimension)
    system = controls if isinstance(controls, ControlSystem) else control_system(
        controls, d, fixed=fixed, max_dimension=max_dimension)
    if system.d != d:
        raise InvalidInputError(f"the control system acts on R^{system.d}, not R^{d}")
    depth = as_count("depth", depth, maximum=MAX_DEPTH)
    seed = as_seed("seed", seed)
    max_work = as_count("max_work", max_work)
    if point is None:
        mean, cov = stratum_point(d, d if rank is None else rank, seed)
        r = exact_rank(cov.tolist())
    else:
        mean, cov, r = rational_point(point, d, rank)
    pairs = _vech_pairs(d)
    z = [_qq(x) for x in mean] + [_qq(cov[i, j]) for i, j in pairs]
    bits = max(int(x.numerator).bit_length() + int(x.denominator).bit_length() for x in z)
    budget = _Budget(max_work, 1 + bits // 64)
    expected = stratum_dimension(d, r)
    _, gens, _, _ = _state_ring(d)
    origin = (0,) * len(gens)

    # Jets at z0: a level-ℓ bracket is needed only to order depth − ℓ (each further bracket
    # differentiates once), so every field is shifted to z0 and truncated; dependence of
    # truncated jets implies dependence of all further brackets at z0, so pruning stays exact.
    at_point = _Echelon(budget)
    words, basis = [], []
    reached = 0

    def keep_independent(candidates: list[tuple[int, str, Field]], order: int,
                         kept: list[tuple[int, str, Field]]) -> list[tuple[int, str, Field]]:
        """Those candidate jets independent (to `order`) of the kept ones and of each other."""
        nonlocal reached
        ech = _Echelon(budget)
        for _, _, fld in kept:
            ech.add(_field_coefficients(_truncate(fld, order)))
        out = []
        for level, name, fld in candidates:
            fld = _truncate(fld, order)
            if not any(fld) or not ech.add(_field_coefficients(fld)):
                continue
            out.append((level, name, fld))
            val = [p.get(origin, QQ(0)) for p in fld]
            if at_point.add({k: v for k, v in enumerate(val) if v}):
                words.append(name)
                basis.append(val)
                reached = level
                if len(words) == expected:
                    break
        return out

    level1 = [(1, n, _shift(f, z)) for n, f in zip(system.names, system.fields, strict=True)
              if any(f)]
    for _, _, f in level1:
        budget.charge(sum(len(p) for p in f))
    generators = keep_independent(level1, depth - 1, [])
    kept, current = list(generators), list(enumerate(generators))
    level = 1
    while level < depth and len(words) < expected and current:
        level += 1
        order = depth - level
        candidates = []
        for j, (_, yname, yf) in current:
            for i, (_, xname, xf) in enumerate(generators):
                if level == 2 and i >= j:
                    continue
                bracket = lie_bracket(_truncate(xf, order + 1), yf, gens, order, budget=budget)
                candidates.append((level, f"[{xname}, {yname}]", bracket))
        new = keep_independent(candidates, order, kept)
        kept += new
        current = [(0, c) for c in new]  # the i < j rule applies at level 2 only
    n_fields = len(kept)
    mean_rank = exact_rank([v[:d] for v in basis]) if basis else 0
    return Accessibility(system.configuration.name, d, r, len(words), expected, mean_rank, depth,
                         reached, tuple(words), n_fields, np.array(mean, dtype=float),
                         np.array(cov, dtype=float), system.fixed,
                         system.configuration.has_bias or bool(np.any(system.fixed["b"])),
                         _float_rows(basis, system.n_state), budget.spent)


# --------------------------------------------------------------------------- the table

def accessibility_table(dims: Sequence[int] | int = (1, 2, 3),
                        controls: Sequence[str] | str | None = None,
                        depth: int = DEFAULT_DEPTH, seed: int = 0, *,
                        max_rows: int = MAX_TABLE_ROWS,
                        max_work: int = MAX_TABLE_WORK) -> tuple[Accessibility, ...]:
    """`accessibility_rank` for every configuration, every d in dims and every covariance rank
    r = 0, …, d, at random rational points of each stratum (fixed seed).

    Each row compares the rank of the span of the brackets of ż = f0(z) + Σ u_i g_i(z) up to
    `depth` with the stratum dimension d + r d − r(r−1)/2; `python -m
    riccati_tf.reachability.lie --table` writes these rows to docs/accessibility.md.

    Parameters
    ----------
    dims : sequence of int, or int, optional
        The dimensions (default (1, 2, 3)); each ≤ `MAX_DIMENSION`.
    controls : sequence of str, or str, optional
        Configuration names (default: all registered; a single name is one configuration).
    depth : int, optional
        The longest bracket (default `DEFAULT_DEPTH`).
    seed : int, optional
        Picks the random points (default 0).
    max_rows : int, optional
        The most rows (default `MAX_TABLE_ROWS`).
    max_work : int, optional
        The work budget of the whole table (default `MAX_TABLE_WORK`; each row also at most
        `MAX_WORK`).

    Returns
    -------
    tuple of Accessibility
        One row per (configuration, d, r), in that order.

    Raises
    ------
    InvalidInputError
        If a configuration name is not registered, dims or controls is not a list (or a single
        item), a dimension exceeds `MAX_DIMENSION`, the table would exceed max_rows, or depth,
        seed or max_work is out of range.
    SolverError
        If the work budget is spent.

    See Also
    --------
    accessibility_rank : one row.
    stratum_dimension : the dimension each row is compared with.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §3 "Rank invariance".
    .. [2] riccati_tf theory, SPEC §4 "Reachability (time-varying controls)".
    .. [3] V. Jurdjevic, "Geometric Control Theory", Cambridge University Press, 1997.

    Examples
    --------
    >>> from riccati_tf.reachability.lie import accessibility_table
    >>> rows = accessibility_table([1, 2], controls="affine")
    >>> [(row.d, row.cov_rank, row.rank, row.expected) for row in rows]
    [(1, 0, 1, 1), (1, 1, 2, 2), (2, 0, 2, 2), (2, 1, 4, 4), (2, 2, 5, 5)]
    """
    names = list(CONFIGURATIONS) if controls is None else [
        configuration(c).name for c in _items("controls", controls, str)]
    dims = [_dimension(d, MAX_DIMENSION) for d in _items("dims", dims, numbers.Integral)]
    rows = len(names) * sum(d + 1 for d in dims)
    if rows > as_count("max_rows", max_rows):
        raise InvalidInputError(f"the table would have {rows} rows, more than max_rows = "
                                f"{max_rows}; pass fewer dims or controls, or a larger max_rows")
    left = as_count("max_work", max_work)
    out: list[Accessibility] = []
    for name in names:
        for d in dims:
            for r in range(d + 1):
                if left <= 0:
                    raise SolverError(f"the table spent its work budget max_work = "
                                      f"{max_work} before row {len(out) + 1} of {rows}")
                try:
                    out.append(accessibility_rank(name, d, rank=r, depth=depth, seed=seed,
                                                  max_work=min(left, MAX_WORK)))
                except SolverError:
                    raise SolverError(f"the table spent its work budget max_work = "
                                      f"{max_work} in row {len(out) + 1} of {rows} ({name}, "
                                      f"d = {d}, rank {r}); pass a larger max_work") from None
                left -= out[-1].work
    return tuple(out)


def _items(name: str, value: object, single: type) -> list[Any]:
    """value as a list: a single `single` item is a one-item list; other non-sequences (and
    mappings, sets) are refused."""
    if isinstance(value, single) and not isinstance(value, bool | np.bool_):
        return [value]
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence | np.ndarray):
        raise InvalidInputError(f"{name} must be a list, got a {type(value).__name__}")
    return list(value)


def table_markdown(rows: Sequence[Accessibility]) -> str:
    """A markdown table: configuration, d, r, rank found, stratum dimension, depth, basis words."""
    lines = ["| configuration | d | rank Σ | accessibility rank | d + rd − r(r−1)/2 | full | "
             "depth | mean rank | words reaching the rank |",
             "|---|---|---|---|---|---|---|---|---|"]
    for a in rows:
        words = ", ".join(f"`{w}`" for w in a.words) if len(a.words) <= 6 else \
            ", ".join(f"`{w}`" for w in a.words[:3]) + f", … ({len(a.words)} words; deepest: " \
            f"`{max(a.words, key=len)}`)"
        lines.append(f"| {a.controls} | {a.d} | {a.cov_rank} | {a.rank} | {a.expected} | "
                     f"{'yes' if a.full else '**no**'} | {a.depth_reached} | {a.mean_rank} | "
                     f"{words} |")
    return "\n".join(lines) + "\n"


def _fixed_note(dims: Sequence[int]) -> str:
    lines = []
    for d in dims:
        for p in ("V", "B"):
            M = generic_matrix(d, p)
            rows = "; ".join(" ".join(str(x) for x in row) for row in M)
            lines.append(f"- d = {d}, held {p}: [{rows}]")
    return "\n".join(lines)


def accessibility_document(dims: Sequence[int] = (1, 2, 3), depth: int = DEFAULT_DEPTH,
                           seed: int = 0) -> str:
    """The text of docs/accessibility.md: the table and how it was computed (dims, depth and
    seed as for `accessibility_table`)."""
    rows = accessibility_table(dims, depth=depth, seed=seed)
    confs = "\n".join(f"- `{c.name}`: {c.summary}" for c in CONFIGURATIONS.values())
    return f"""# Controllability: Lie-bracket accessibility ranks of the Gaussian moment system

Generated by `python -m riccati_tf.reachability.lie --table --out docs/accessibility.md` (function
`riccati_tf.reachability.lie.accessibility_document`); do not edit by hand.

State z = (m, vech Σ); the moment equations of SPEC §2 written as ż = f0(z) + Σ u_i g_i(z), one
field g_i per monomial in the controls. For each configuration, dimension d and covariance rank
r, the rank of the span of right-normed Lie brackets of depth ≤ {depth} is computed exactly (over
QQ) at a random rational point (m, Σ = L Lᵀ) of the stratum (seed {seed}) and compared with the
state-manifold dimension d + r d − r(r−1)/2 of SPEC §3. "depth" is the length of the longest
bracket needed; "mean rank" is the rank of the mean components of the span.

Configurations:
{confs}

Held ("tied") parameters take the fixed generic rational matrices below (`generic_matrix`):
{_fixed_note(dims)}

Reading the table. "affine", "full" and "values" (held B) satisfy the rank condition on every
stratum. "attention" (held V, A = 0) satisfies it at positive-definite points but not on the
rank-1 strata for d ≥ 2: with Σ = ℓℓᵀ every covariance velocity VΣBΣ + ΣBᵀΣVᵀ =
(ℓᵀBℓ)(Vℓℓᵀ + ℓℓᵀVᵀ) is a multiple of one field, and the covariance parts of the fields depend
on Σ only, so the rank is d + 1 at every depth. `riccati_tf.steer(controls="attention")` still
steers between any two Gaussians of equal rank because it chooses the depth-constant
V = log(Φ1)/T for the given pair (SPEC §4), which puts the target on that V's orbit; with a V
imposed by the caller it is bound by this table. Without a bias the mean obeys
ṁ = (A + V + VΣB) m: m = 0 is invariant, and with Σ = 0 only a drift can move the mean
("attention-nobias", r = 0: rank 1 from f0 = (Vm, 0)). The "affine-nobias" orbits at Σ ≻ 0 keep
mᵀΣ⁻¹m (Φm and ΦΣΦᵀ leave it unchanged), hence rank d + d(d+1)/2 − 1 there. In d = 1,
"values-nobias" has the single field g[V_11] (B is held), so its rank is 1. A rank below the
dimension is a lower bound at the depth explored; it is exact where an invariant, as above,
explains it.

{table_markdown(rows)}"""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m riccati_tf.reachability.lie",
                                     description="Accessibility ranks of the moment system.")
    parser.add_argument("--table", action="store_true", help="print/write the accessibility table")
    parser.add_argument("--out", help="write the markdown document to this path")
    parser.add_argument("--depth", type=int, default=DEFAULT_DEPTH)
    parser.add_argument("--dims", type=int, nargs="+", default=[1, 2, 3])
    args = parser.parse_args(argv)
    if not args.table:
        parser.print_help()
        return 0
    try:
        text = accessibility_document(tuple(args.dims), depth=args.depth)
        if args.out:
            with open(args.out, "w", encoding="utf-8") as fh:
                fh.write(text)
        else:
            sys.stdout.write(text)
    except (InvalidInputError, OSError) as exc:  # bad dims/depth, or an --out not writable
        print(f"python -m riccati_tf.reachability.lie: error: {exc}", file=sys.stderr)
        return 2
    except SolverError as exc:  # a work budget spent
        print(f"python -m riccati_tf.reachability.lie: {exc}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
