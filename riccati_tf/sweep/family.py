"""Sweep specs → parameter families: a grid or a random ensemble over named scalar axes.

Every layer field and the initial Gaussian are AFFINE in the axes,

    X(x) = X₀ + Σ_k x_k X_k          (x = the configuration's axis values),

written in the spec as a literal (number or nested list: X₀ only) or as a mapping
{const: X₀, <axis>: X_k, ...}. Strings are never evaluated. A sweep spec:

    analysis: certify                 # certify | flow | particles
    family:
      grid: {v: {linspace: [-1, 1, 101]}, a: [-0.5, 0, 0.5]}          # Cartesian product, or
      random: {n: 10000, seed: 7, axes: {v: {uniform: [-1, 1]}, s: {loguniform: [0.1, 10]}}}
    chunk_size: 1000
    params: {A: {const: [[0, -0.3], [0.3, 0]], a: [[1, 0], [0, 1]]},
             B: [[1, 0.2], [0.2, 0.6]], V: {v: [[1, 0], [0, 1]]}, b: [0, 0]}   # or heads
    initial: {mean: [0, 0], cov: [[1, 0.3], [0.3, 0.5]]}
    t_final: 5                        # flow and particles only
    particles: {n_tokens: 400, n_steps: 40, seed: 0}                  # particles only
    plot: {x: v, y: a}                # default axes of the phase diagram

The layer fields are those of `riccati_tf.Params` (A, B, V, b, heads; a missing one is zero,
d from those given). The older scalar field ``v`` (V = vI: ``v: {v: 1}``) is still read, with
a DeprecationWarning; ``V: {v: I}`` (I the identity matrix) says the same.

Configuration ids: grid — the C-order index into the product of the axes in the order written
(last axis fastest); random — draws in chunks, chunk c from `default_rng([seed, c])`, so any chunk
is recomputed alone and identically. Every axis is bounded, and the covariance is affine in the
axes while the PSD cone is convex, so checking Σ0 at the 2^k corners of the parameter box (k = the
axes Σ0 depends on) proves every configuration's Σ0 valid before anything runs.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ..io.spec import (
    SpecError,
    check_keys,
    check_numeric,
    field,
    parse_gaussian,
    parse_number,
    parse_params,
)
from ..state.params import Params
from ..state.validation import MAX_SEED, SYM_RTOL

__all__ = ["ANALYSES", "ANALYSIS_COLUMNS", "Family", "parse_family"]

ANALYSES = ("certify", "flow", "particles")
#: each analysis' result columns (in this order) and their kinds ("str", "bool", "float")
ANALYSIS_COLUMNS = {
    "certify": {"regime": "str", "theorem": "str", "exact": "bool", "global": "bool",
                "rate": "float", "blowup_time": "float", "threshold": "float", "path": "str"},
    "flow": {"status": "str", "blowup_time": "float", "cov_eig_min": "float",
             "cov_eig_max": "float", "mean_norm": "float", "error": "str"},
    "particles": {"status": "str", "t_end": "float", "flow_cov_eig_min": "float",
                  "flow_cov_eig_max": "float", "particle_cov_eig_min": "float",
                  "particle_cov_eig_max": "float", "rel_diff": "float", "error": "str"},
}
GRID_RULES = ("values", "linspace", "geomspace")
RANDOM_RULES = ("uniform", "loguniform")
DEFAULT_CHUNK = 1000
#: a family larger than this is refused (ids are int64 and the manifest lists chunks)
MAX_CONFIGS = 10 ** 12
#: points of one grid axis (a linspace/geomspace longer than this is refused before allocation)
MAX_AXIS_POINTS = 10 ** 6
#: chunks of a family (the manifest holds one record per chunk): raise chunk_size beyond it
MAX_CHUNKS = 10 ** 6
#: rows × d² of one chunk: a stacked d × d field of a chunk holds at most this many float64
#: entries (400 MB), so computing a chunk never asks for more memory than a few of these
MAX_CHUNK_ENTRIES = 5 * 10 ** 7
#: particles analysis: tokens per configuration and Euler steps (the attention is O(N²) a step)
MAX_TOKENS = 10 ** 5
MAX_STEPS = 10 ** 5
TOP_FIELDS = {"analysis", "family", "chunk_size", "params", "initial", "t_final", "particles",
              "plot"}
PARAM_FIELDS = {"A", "B", "V", "v", "b", "heads"}


@dataclass(frozen=True)
class Axis:
    """A named scalar axis: grid values (grid families) or a bounded distribution (random).

    rule: "values" | "linspace" | "geomspace" (grid) or "uniform" | "loguniform" (random);
    values: the grid points (grid only); low, high: the bounds of every value on the axis.
    """

    name: str
    rule: str
    low: float
    high: float
    values: tuple[float, ...] | None = None

    def draw(self, u: np.ndarray) -> np.ndarray:
        """Map uniform [0, 1) draws u to the axis distribution (random families)."""
        if self.rule == "uniform":
            return self.low + (self.high - self.low) * u
        return np.exp(np.log(self.low) + (np.log(self.high) - np.log(self.low)) * u)


@dataclass(frozen=True, eq=False)
class AffineField:
    """X(x) = const + Σ_k x[axes[k]] · coefs[k], the value of one spec field (`where`)."""

    where: str
    const: np.ndarray
    axes: tuple[str, ...]
    coefs: np.ndarray  # (k, *const.shape)

    def evaluate(self, values: dict[str, np.ndarray]) -> np.ndarray:
        """The field at n configurations: an (n, *const.shape) array."""
        n = len(next(iter(values.values())))
        out = np.broadcast_to(self.const, (n, *self.const.shape)).copy()
        for name, coef in zip(self.axes, self.coefs, strict=True):
            out += values[name].reshape(-1, *([1] * coef.ndim)) * coef
        return out


@dataclass(frozen=True, eq=False)
class Chunk:
    """The configurations of one chunk, as stacked arrays.

    ids (n,); values {axis: (n,)}; A (n, d, d); V[h] (n, d, d) and B[h] (n, d, d) per head;
    b (n, d); mean (n, d); cov (n, d, d).
    """

    index: int
    ids: np.ndarray
    values: dict[str, np.ndarray]
    A: np.ndarray
    V: tuple[np.ndarray, ...]
    B: tuple[np.ndarray, ...]
    b: np.ndarray
    mean: np.ndarray
    cov: np.ndarray

    def __len__(self) -> int:
        return self.ids.size

    def take(self, rows: np.ndarray) -> Chunk:
        """The configurations at positions `rows` of this chunk, as a Chunk of their own."""
        return Chunk(self.index, self.ids[rows], {k: v[rows] for k, v in self.values.items()},
                     self.A[rows], tuple(V[rows] for V in self.V),
                     tuple(B[rows] for B in self.B), self.b[rows], self.mean[rows],
                     self.cov[rows])

    def params(self, i: int) -> Params:
        """The layer of configuration i of the chunk as validated Params (the per-case path)."""
        if len(self.V) == 1:
            return Params(A=self.A[i], B=self.B[0][i], V=self.V[0][i], b=self.b[i])
        return Params(A=self.A[i], heads=[(V[i], B[i]) for V, B in zip(self.V, self.B,
                                                                       strict=True)], b=self.b[i])


@dataclass(frozen=True, eq=False)
class Family:
    """A parameter family with its analysis settings (see the module docstring for the spec).

    Every layer field and the initial Gaussian are affine in the axes,
    X(x) = X₀ + Σ_k x_k X_k; configuration c of a grid is the C-order index into the product
    of the axes, a random family draws chunk c from ``default_rng([seed, c])``, so any chunk is
    recomputed alone and identically (`chunk`). Build it with `parse_family`, which checks
    Σ0 ⪰ 0 at every corner of the parameter box (λ_min(Σ0(x)) is concave in x).

    Parameters
    ----------
    kind : str
        "grid" (Cartesian product of the axes) or "random" (independent draws).
    axes : tuple of Axis
        The named scalar axes, in the order of the spec.
    n_configs : int
        The number of configurations.
    chunk_size : int
        Configurations per chunk (the last chunk may be shorter).
    seed : int
        The seed of a random family (0 for a grid).
    d : int
        The dimension of the tokens.
    n_heads : int
        The number of attention heads.
    fields : dict of str to AffineField
        {"A", "b", "mean", "cov", "V[h]", "B[h]"} → the affine field of each.
    analysis : str
        "certify", "flow" or "particles" (ANALYSES).
    t_final : float or None
        The horizon of flow and particles analyses (None for certify).
    particles : dict
        {n_tokens, n_steps, seed} of a particles analysis ({} otherwise).
    plot_axes : tuple (str, str or None)
        The default axes (x, y) of the phase diagram.
    spec : dict
        The canonical spec mapping (without plot), whose SHA-256 is `fingerprint`.

    Raises
    ------
    TypeError
        When a field is missing (the dataclass constructor; `parse_family` does the checks).

    See Also
    --------
    parse_family : builds and validates a Family from a spec mapping.
    riccati_tf.sweep.runner.run_sweep : runs the family's analysis chunk by chunk.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up" (the regimes a certify sweep maps).

    Examples
    --------
    >>> from riccati_tf.sweep.family import parse_family
    >>> family = parse_family({
    ...     "family": {"grid": {"v": [-1.0, 1.0], "a": {"linspace": [-0.5, 0.5, 3]}}},
    ...     "chunk_size": 4,
    ...     "params": {"A": {"a": [[1, 0], [0, 1]]}, "B": [[1, 0.2], [0.2, 0.6]],
    ...                "V": {"v": [[1, 0], [0, 1]]}},
    ...     "initial": {"cov": [[1, 0.3], [0.3, 0.5]]}})
    >>> family.kind, family.n_configs, family.n_chunks, family.columns[:3]
    ('grid', 6, 2, ['config_id', 'v', 'a'])
    >>> chunk = family.chunk(1)               # configurations 4 and 5: v = 1, a = 0, 0.5
    >>> chunk.ids.tolist(), chunk.values["a"].tolist(), chunk.V[0][1].tolist()
    ([4, 5], [0.0, 0.5], [[1.0, 0.0], [0.0, 1.0]])
    """

    kind: str
    axes: tuple[Axis, ...]
    n_configs: int
    chunk_size: int
    seed: int
    d: int
    n_heads: int
    fields: dict[str, AffineField]
    analysis: str
    t_final: float | None
    particles: dict
    plot_axes: tuple[str, str | None]
    spec: dict

    @cached_property
    def fingerprint(self) -> str:
        """SHA-256 of the canonical spec (`fingerprint`): what a results folder is tied to."""
        return fingerprint(self.spec)

    @property
    def n_chunks(self) -> int:
        """The number of chunks, ⌈n_configs / chunk_size⌉."""
        return -(-self.n_configs // self.chunk_size)

    @property
    def axis_names(self) -> tuple[str, ...]:
        """The names of the axes, in the order of the spec."""
        return tuple(a.name for a in self.axes)

    @property
    def columns(self) -> list[str]:
        """The columns of the family's results: config_id, the axes, the analysis columns."""
        return ["config_id", *self.axis_names, *ANALYSIS_COLUMNS[self.analysis]]

    def chunk_ids(self, c: int) -> np.ndarray:
        """The config ids of chunk c (int64); IndexError outside 0..n_chunks − 1."""
        if not 0 <= c < self.n_chunks:
            raise IndexError(f"chunk {c} outside 0..{self.n_chunks - 1}")
        return np.arange(c * self.chunk_size, min(self.n_configs, (c + 1) * self.chunk_size),
                         dtype=np.int64)

    def axis_values(self, c: int) -> dict[str, np.ndarray]:
        """{axis: values} for the configurations of chunk c (deterministic in (spec, c))."""
        ids = self.chunk_ids(c)
        if self.kind == "grid":
            shape = tuple(len(a.values or ()) for a in self.axes)
            idx = np.unravel_index(ids, shape)
            return {a.name: np.asarray(a.values)[i] for a, i in zip(self.axes, idx, strict=True)}
        u = np.random.default_rng([self.seed, c]).random((ids.size, len(self.axes)))
        return {a.name: a.draw(u[:, k]) for k, a in enumerate(self.axes)}

    def chunk(self, c: int) -> Chunk:
        """Chunk c as stacked arrays (Σ0 symmetrised as `as_covariance` does)."""
        values = self.axis_values(c)
        f = {name: fld.evaluate(values) for name, fld in self.fields.items()}
        heads = range(self.n_heads)
        cov = 0.5 * (f["cov"] + np.swapaxes(f["cov"], 1, 2))  # as_covariance's symmetrisation
        return Chunk(c, self.chunk_ids(c), values, f["A"], tuple(f[f"V[{h}]"] for h in heads),
                     tuple(f[f"B[{h}]"] for h in heads), f["b"], f["mean"], cov)


def fingerprint(spec: dict) -> str:
    """SHA-256 of the spec's JSON, key order kept (the order of the axes fixes the grid's ids):
    what a results folder is tied to."""
    return hashlib.sha256(json.dumps(spec, separators=(",", ":")).encode()).hexdigest()


# ------------------------------------------------------------------------------- parsing


def _finite(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SpecError(f"{where}: must be a number, got {value!r}")
    if not np.isfinite(value):
        raise SpecError(f"{where}: must be finite, got {value!r}")
    return float(value)


def _pair(value: Any, where: str, *, positive: bool = False) -> tuple[float, float]:
    if not isinstance(value, list) or len(value) != 2:
        raise SpecError(f"{where}: must be a list [low, high]")
    low, high = (_finite(v, f"{where}[{i}]") for i, v in enumerate(value))
    if not low < high:
        raise SpecError(f"{where}: needs low < high, got [{low}, {high}]")
    if positive and low <= 0:
        raise SpecError(f"{where}: a log-scale range needs low > 0, got {low}")
    return low, high


def _grid_axis(name: str, rule: Any, where: str) -> Axis:
    """[v, ...] | {values: [...]} | {linspace: [start, stop, num]} | {geomspace: [...]}."""
    if isinstance(rule, list):
        rule = {"values": rule}
    if isinstance(rule, dict):
        check_keys(rule, GRID_RULES, f"{where}.")
    if not isinstance(rule, dict) or len(rule) != 1:
        raise SpecError(f"{where}: must be a list of values or one of "
                        f"{{values: [...]}}, {{linspace: [start, stop, num]}}, "
                        f"{{geomspace: [start, stop, num]}}")
    kind, arg = next(iter(rule.items()))
    here = f"{where}.{kind}"
    if kind == "values":
        if not isinstance(arg, list) or not arg:
            raise SpecError(f"{here}: must be a non-empty list of numbers")
        if len(arg) > MAX_AXIS_POINTS:
            raise SpecError(f"{here}: {len(arg)} values exceed the limit {MAX_AXIS_POINTS} "
                            f"points per axis")
        values = np.array([_finite(v, f"{here}[{i}]") for i, v in enumerate(arg)])
    else:
        if not isinstance(arg, list) or len(arg) != 3:
            raise SpecError(f"{here}: must be a list [start, stop, num]")
        start, stop = (_finite(v, f"{here}[{i}]") for i, v in enumerate(arg[:2]))
        num = arg[2]
        if isinstance(num, bool) or not isinstance(num, int) or num < 1:
            raise SpecError(f"{here}[2]: num must be an integer ≥ 1, got {num!r}")
        if num > MAX_AXIS_POINTS:
            raise SpecError(f"{here}[2]: num = {num} exceeds the limit {MAX_AXIS_POINTS} points "
                            f"per axis")
        if kind == "geomspace" and (start <= 0 or stop <= 0):
            raise SpecError(f"{here}: geomspace needs start > 0 and stop > 0")
        values = (np.linspace if kind == "linspace" else np.geomspace)(start, stop, num)
    return Axis(name, kind, float(values.min()), float(values.max()),
                tuple(float(v) for v in values))


def _random_axis(name: str, rule: Any, where: str) -> Axis:
    """{uniform: [low, high]} | {loguniform: [low, high]} (low > 0)."""
    if isinstance(rule, dict):
        check_keys(rule, RANDOM_RULES, f"{where}.")
    if not isinstance(rule, dict) or len(rule) != 1:
        raise SpecError(f"{where}: must be {{uniform: [low, high]}} or "
                        f"{{loguniform: [low, high]}}")
    kind, arg = next(iter(rule.items()))
    low, high = _pair(arg, f"{where}.{kind}", positive=kind == "loguniform")
    return Axis(name, kind, low, high)


def _axes(spec: Any, where: str, make: Callable[[str, Any, str], Axis]) -> tuple[Axis, ...]:
    if not isinstance(spec, dict) or not spec:
        raise SpecError(f"{where}: must be a non-empty mapping {{axis name: rule}}")
    axes, count = [], 1
    for name, rule in spec.items():
        if not isinstance(name, str) or not name.isidentifier() or name == "const":
            raise SpecError(f"{where}: axis names must be identifiers other than 'const', "
                            f"got {name!r}")
        axes.append(make(name, rule, f"{where}.{name}"))
        if axes[-1].values is not None:  # grid: refuse before building the next axis
            count *= len(axes[-1].values)
            if count > MAX_CONFIGS:
                raise SpecError(f"{where}: the axes up to {name} already give {count} "
                                f"configurations, over the limit {MAX_CONFIGS}")
    return tuple(axes)


def _family(spec: Any) -> tuple[str, tuple[Axis, ...], int, int]:
    """(kind, axes, n_configs, seed) from family: {grid: {...}} | {random: {n, seed, axes}}."""
    if isinstance(spec, dict):
        check_keys(spec, ("grid", "random"), "family.")
    if not isinstance(spec, dict) or len(spec) != 1:
        raise SpecError("family: must be {grid: {axis: values, ...}} or "
                        "{random: {n: N, seed: S, axes: {axis: distribution, ...}}}")
    kind, body = next(iter(spec.items()))
    if kind == "grid":
        axes = _axes(body, "family.grid", _grid_axis)
        return kind, axes, math.prod(len(a.values or ()) for a in axes), 0
    if not isinstance(body, dict):
        raise SpecError("family.random: must be a mapping with n, seed and axes")
    check_keys(body, ("n", "seed", "axes"), "family.random.")
    n = parse_number(body, "n", "family.random.", kind=int)
    if not 1 <= n <= MAX_CONFIGS:
        raise SpecError(f"family.random.n: must be between 1 and {MAX_CONFIGS}, got {n}")
    seed = parse_number(body, "seed", "family.random.", default=0, kind=int, minimum=0,
                        maximum=MAX_SEED, limit="validation.MAX_SEED")
    axes = _axes(field(body, "axes", "family.random."), "family.random.axes", _random_axis)
    return kind, axes, n, seed


def _affine(value: Any, where: str, axes: tuple[str, ...]) -> AffineField:
    """A literal X₀, or {const: X₀, axis: X_k, ...} (every term of the same shape)."""
    terms = value if isinstance(value, dict) else {"const": value}
    if not terms:
        raise SpecError(f"{where}: an empty mapping; give a value or {{const: .., axis: ..}}")
    arrays = {}
    for key, term in terms.items():
        if key != "const" and key not in axes:
            close = difflib.get_close_matches(str(key), ("const", *axes), n=1, cutoff=0.6)
            raise SpecError(f"{where}.{key}: not an axis of the family (axes: "
                            f"{', '.join(axes)}) and not 'const'"
                            + (f"; did you mean {close[0]!r}?" if close else ""))
        here = where if key == "const" and not isinstance(value, dict) else f"{where}.{key}"
        check_numeric(term, here)
        try:
            arr = np.array(term, dtype=float)
        except (TypeError, ValueError):
            raise SpecError(f"{here}: must be a number or a rectangular nested list") from None
        if not np.all(np.isfinite(arr)):
            raise SpecError(f"{here}: contains NaN or Inf")
        arrays[key] = arr
    shapes = {a.shape for a in arrays.values()}
    if len(shapes) != 1:
        raise SpecError(f"{where}: the constant and the axis terms must have one shape, got "
                        + ", ".join(f"{k} {a.shape}" for k, a in arrays.items()))
    shape = shapes.pop()
    const = arrays.pop("const", np.zeros(shape))
    names = tuple(arrays)
    coefs = np.array([arrays[k] for k in names]).reshape(len(names), *shape)
    return AffineField(where, const, names, coefs)


def _times_identity(fld: AffineField, d: int) -> AffineField:
    """The scalar field v(x) as the matrix field v(x) I."""
    if fld.const.shape != ():
        raise SpecError(f"{fld.where}: must be a number (V = vI), got shape {fld.const.shape}")
    eye = np.eye(d)
    return AffineField(fld.where, fld.const * eye, fld.axes, fld.coefs[:, None, None] * eye)


def _value_field(head: dict, where: str, names: tuple[str, ...], d: int) -> AffineField:
    if "V" in head and "v" in head:
        raise SpecError(f"{where}: give V (a matrix) or v (V = vI), not both")
    if "v" in head:
        warnings.warn(f"{where}.v: the scalar field v is deprecated; write V: {{axis: identity "
                      f"matrix}} (V = vI), the name Params uses", DeprecationWarning,
                      stacklevel=2)
        return _times_identity(_affine(head["v"], f"{where}.v", names), d)
    if "V" in head:
        return _affine(head["V"], f"{where}.V", names)
    return AffineField(f"{where}.V", np.zeros((d, d)), (), np.zeros((0, d, d)))


def _dimension(spec: dict, names: tuple[str, ...]) -> int:
    """d: the size of the first square matrix among A, B, V (or the first head's B, V), else
    the length of b."""
    heads = spec.get("heads")
    first = heads[0] if isinstance(heads, list) and heads and isinstance(heads[0], dict) else {}
    for where, value in [("params.A", spec.get("A")), ("params.B", spec.get("B")),
                         ("params.V", spec.get("V")), ("params.heads[0].B", first.get("B")),
                         ("params.heads[0].V", first.get("V"))]:
        if value is not None:
            shape = _affine(value, where, names).const.shape
            if len(shape) != 2 or shape[0] != shape[1]:
                raise SpecError(f"{where}: must be a square matrix, got shape {shape}")
            return int(shape[0])
    if "b" in spec:
        shape = _affine(spec["b"], "params.b", names).const.shape
        if len(shape) == 1:
            return int(shape[0])
    raise SpecError("params: nothing gives the dimension d: give A, or B and V, heads or b")


def _layer_fields(spec: Any, names: tuple[str, ...]) -> tuple[dict[str, AffineField], int]:
    if not isinstance(spec, dict):
        raise SpecError("params: must be a mapping with A, B, V, b or heads (A = 0 when "
                        "omitted)")
    check_keys(spec, PARAM_FIELDS, "params.")
    d = _dimension(spec, names)
    A = (_affine(spec["A"], "params.A", names) if "A" in spec else
         AffineField("params.A", np.zeros((d, d)), (), np.zeros((0, d, d))))
    if A.const.shape != (d, d):
        raise SpecError(f"params.A: must be a {d}×{d} matrix, got shape {A.const.shape}")
    zero_b = AffineField("params.b", np.zeros(d), (), np.zeros((0, d)))
    fields = {"A": A, "b": _affine(spec["b"], "params.b", names) if "b" in spec else zero_b}
    if "heads" in spec:
        if any(k in spec for k in ("B", "V", "v")):
            raise SpecError("params: give either B and V/v (one head) or heads, not both")
        heads = spec["heads"]
        if not isinstance(heads, list) or not heads:
            raise SpecError("params.heads: must be a non-empty list of {V or v, B} mappings")
    else:
        heads = [{k: spec[k] for k in ("B", "V", "v") if k in spec}]
    for h, head in enumerate(heads):
        where = f"params.heads[{h}]" if "heads" in spec else "params"
        if not isinstance(head, dict):
            raise SpecError(f"{where}: must be a mapping with B and V or v")
        check_keys(head, ("B", "V", "v"), f"{where}.")
        fields[f"V[{h}]"] = _value_field(head, where, names, d)
        fields[f"B[{h}]"] = (_affine(head["B"], f"{where}.B", names) if "B" in head else
                             AffineField(f"{where}.B", np.zeros((d, d)), (), np.zeros((0, d, d))))
    return fields, len(heads)


def _initial_fields(spec: Any, names: tuple[str, ...], d: int) -> dict[str, AffineField]:
    if not isinstance(spec, dict):
        raise SpecError("initial: must be a mapping with cov (and mean)")
    check_keys(spec, ("mean", "cov"), "initial.")
    cov = _affine(field(spec, "cov", "initial."), "initial.cov", names)
    mean = (_affine(spec["mean"], "initial.mean", names) if "mean" in spec else
            AffineField("initial.mean", np.zeros(d), (), np.zeros((0, d))))
    for term, label in [(cov.const, "const"), *zip(cov.coefs, cov.axes, strict=True)]:
        if term.ndim == 2 and term.shape[0] == term.shape[1] and not np.allclose(
                term, term.T, rtol=0, atol=SYM_RTOL * max(float(np.linalg.norm(term)), 1e-300)):
            raise SpecError(f"initial.cov.{label}: every term of an affine covariance must be "
                            f"symmetric")
    return {"mean": mean, "cov": cov}


def _corners(axes: tuple[Axis, ...], names: set[str]) -> list[dict[str, np.ndarray]]:
    """The 2^k corners of the parameter box over the axes in `names` (others at their low)."""
    used = [a for a in axes if a.name in names]
    if len(used) > 16:
        raise SpecError(f"initial.cov depends on {len(used)} axes; at most 16 are supported "
                        f"(its validity is checked at the 2^k corners of the parameter box)")
    out = []
    for choice in itertools.product(*[(a.low, a.high) for a in used]):
        corner = {a.name: np.array([a.low]) for a in axes}
        corner.update({a.name: np.array([v]) for a, v in zip(used, choice, strict=True)})
        out.append(corner)
    return out


def _validate(fields: dict[str, AffineField], n_heads: int, axes: tuple[Axis, ...]) -> None:
    """Check shapes at one configuration (the spec parsers name the field) and Σ0 ⪰ 0 at every
    corner of the parameter box (λ_min(Σ0(x)) is concave in x: its minimum is at a corner)."""
    cov_axes = set(fields["cov"].axes) | set(fields["mean"].axes)
    for corner in _corners(axes, cov_axes):
        at = {name: fld.evaluate(corner)[0].tolist() for name, fld in fields.items()}
        if n_heads == 1:
            layer = {"A": at["A"], "B": at["B[0]"], "V": at["V[0]"], "b": at["b"]}
        else:
            layer = {"A": at["A"], "b": at["b"],
                     "heads": [{"V": at[f"V[{h}]"], "B": at[f"B[{h}]"]} for h in range(n_heads)]}
        parse_params(layer, "params")
        where = "initial" if not cov_axes else "initial (at the parameter-box corner " + \
            ", ".join(f"{k} = {v[0]:g}" for k, v in corner.items() if k in cov_axes) + ")"
        parse_gaussian({"mean": at["mean"], "cov": at["cov"]}, where)


def _check_chunking(n_configs: int, chunk_size: int, d: int) -> None:
    """Refuse, before anything is allocated, more than MAX_CHUNKS chunks or chunks whose stacked
    d × d fields exceed MAX_CHUNK_ENTRIES."""
    n_chunks = -(-n_configs // chunk_size)
    if n_chunks > MAX_CHUNKS:
        raise SpecError(f"chunk_size: {n_configs} configurations in chunks of {chunk_size} make "
                        f"{n_chunks} chunks, over the limit {MAX_CHUNKS}; raise chunk_size")
    rows = min(chunk_size, n_configs)
    if rows * d * d > MAX_CHUNK_ENTRIES:
        raise SpecError(f"chunk_size: {rows} configurations of {d} × {d} matrices make "
                        f"{rows * d * d} entries per stacked field of a chunk, over the limit "
                        f"{MAX_CHUNK_ENTRIES}; lower chunk_size")


def _particles(spec: Any) -> dict:
    if not isinstance(spec, dict):
        raise SpecError("particles: must be a mapping with n_tokens, n_steps (and seed)")
    check_keys(spec, ("n_tokens", "n_steps", "seed"), "particles.")
    out = {"n_tokens": parse_number(spec, "n_tokens", "particles.", kind=int),
           "n_steps": parse_number(spec, "n_steps", "particles.", kind=int),
           "seed": parse_number(spec, "seed", "particles.", default=0, kind=int)}
    for key, low, high in (("n_tokens", 2, MAX_TOKENS), ("n_steps", 1, MAX_STEPS),
                           ("seed", 0, None)):
        if out[key] < low:
            raise SpecError(f"particles.{key}: must be ≥ {low}, got {out[key]}")
        if high is not None and out[key] > high:
            raise SpecError(f"particles.{key}: {out[key]} exceeds the limit {high}")
    return out


def _plot_axes(spec: Any, names: tuple[str, ...]) -> tuple[str, str | None]:
    default = (names[0], names[1] if len(names) > 1 else None)
    if spec is None:
        return default
    if not isinstance(spec, dict):
        raise SpecError("plot: must be a mapping {x: axis, y: axis}")
    check_keys(spec, ("x", "y"), "plot.")
    x, y = spec.get("x", default[0]), spec.get("y", default[1])
    for key, name in (("x", x), ("y", y)):
        if name is not None and name not in names:
            raise SpecError(f"plot.{key}: {name!r} is not an axis of the family "
                            f"(axes: {', '.join(names)})")
    return x, y


def parse_family(spec: dict) -> Family:
    """Build and validate a Family from a sweep spec mapping.

    The spec (module docstring) names an analysis, a grid or random family of scalar axes, and
    layer fields and an initial Gaussian affine in the axes, X(x) = X₀ + Σ_k x_k X_k. Strings
    are never evaluated. Everything is checked before anything runs: unknown keys, the axes
    (finite, bounded, at most MAX_AXIS_POINTS points each, MAX_CONFIGS configurations), the
    chunking (MAX_CHUNKS chunks, MAX_CHUNK_ENTRIES entries per stacked field), the shapes of
    the layer (as `riccati_tf.Params` checks them) and Σ0 ⪰ 0 at each of the 2^k corners of the
    parameter box (λ_min(Σ0(x)) is concave in x, so its minimum is at a corner).

    Parameters
    ----------
    spec : dict
        The sweep spec mapping: analysis, family, chunk_size, params, initial, t_final,
        particles, plot (as `riccati_tf.io.spec.load_spec` reads it from a file).

    Returns
    -------
    Family
        The validated family.

    Raises
    ------
    SpecError
        (an InvalidInputError) naming the field: a missing or unknown field, a value of the
        wrong type, shape or sign, NaN/Inf, an asymmetric term of the covariance, Σ0 not
        positive semidefinite at a corner of the parameter box, or a limit exceeded.

    See Also
    --------
    Family : the parsed family and its chunks.
    riccati_tf.sweep.runner.run_sweep : parses the spec with it and runs the sweep.
    riccati_tf.io.spec.load_spec : reads a spec file.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    >>> from riccati_tf.sweep.family import parse_family
    >>> spec = {"family": {"random": {"n": 10, "seed": 7, "axes": {"v": {"uniform": [-1, 1]}}}},
    ...         "params": {"A": [[0.0, 1.0], [-1.0, 0.0]], "B": [[1, 0], [0, 1]],
    ...                    "V": {"v": [[1, 0], [0, 1]]}},
    ...         "initial": {"cov": [[1, 0], [0, 1]]}}
    >>> family = parse_family(spec)
    >>> family.kind, family.analysis, family.n_configs, family.d, family.plot_axes
    ('random', 'certify', 10, 2, ('v', None))

    A covariance that leaves the PSD cone somewhere in the box is refused before anything runs:

    >>> from riccati_tf.errors import InvalidInputError
    >>> spec["initial"] = {"cov": {"const": [[1, 0], [0, 1]], "v": [[2, 0], [0, 0]]}}
    >>> try:
    ...     parse_family(spec)
    ... except InvalidInputError as exc:
    ...     print(str(exc).split(":")[0])
    initial (at the parameter-box corner v = -1)
    """
    if not isinstance(spec, dict):
        raise SpecError(f"the sweep spec must be a mapping of fields, got {type(spec).__name__}")
    check_keys(spec, TOP_FIELDS, "")
    analysis = field(spec, "analysis", default="certify")
    if analysis not in ANALYSES:
        raise SpecError(f"analysis: must be one of {', '.join(ANALYSES)}, got {analysis!r}")
    kind, axes, n_configs, seed = _family(field(spec, "family"))
    names = tuple(a.name for a in axes)
    if len(set(names)) != len(names):
        raise SpecError("family: axis names must be distinct")
    chunk_size = parse_number(spec, "chunk_size", default=DEFAULT_CHUNK, kind=int)
    if chunk_size < 1:
        raise SpecError(f"chunk_size: must be ≥ 1, got {chunk_size}")
    fields, n_heads = _layer_fields(field(spec, "params"), names)
    d = fields["A"].const.shape[0]
    _check_chunking(n_configs, chunk_size, d)
    fields.update(_initial_fields(field(spec, "initial"), names, d))
    _validate(fields, n_heads, axes)
    t_final, particles = None, {}
    if analysis in ("flow", "particles"):
        t_final = parse_number(spec, "t_final")
        if not (np.isfinite(t_final) and t_final > 0):
            raise SpecError(f"t_final: must be a positive finite number, got {t_final}")
    if analysis == "particles":
        particles = _particles(field(spec, "particles"))
    canonical = {k: v for k, v in spec.items() if k != "plot"}
    try:
        json.dumps(canonical)
    except (TypeError, ValueError):
        raise SpecError("the sweep spec must hold only numbers, strings, lists and mappings") \
            from None
    return Family(kind, axes, n_configs, chunk_size, seed, d, n_heads, fields, analysis,
                  t_final, particles, _plot_axes(spec.get("plot"), names), canonical)
