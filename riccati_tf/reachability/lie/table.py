"""The table of accessibility ranks of every configuration on every stratum, and the text of
docs/accessibility.md (`python -m riccati_tf.reachability.lie --table`).
"""

from __future__ import annotations

import argparse
import numbers
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...errors import InvalidInputError, SolverError
from ...state.validation import as_count
from .configurations import CONFIGURATIONS, configuration
from .exact import generic_matrix
from .rank import DEFAULT_DEPTH, MAX_WORK, Accessibility, accessibility_rank
from .system import MAX_DIMENSION, _dimension

__all__: list[str] = []  # accessibility_table: riccati_tf.reachability.lie


#: the most rows one `accessibility_table` call computes (`max_rows` overrides), and its work
#: budget (`max_work` overrides; the generated table for d = 1, 2, 3 takes 5.4·10⁶)
MAX_TABLE_ROWS = 200
MAX_TABLE_WORK = 20_000_000


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
    return _document(accessibility_table(dims, depth=depth, seed=seed), dims, depth, seed)


def _document(rows: Sequence[Accessibility], dims: Sequence[int], depth: int, seed: int) -> str:
    """The text of `accessibility_document` around rows, the table of (dims, depth, seed)."""
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
