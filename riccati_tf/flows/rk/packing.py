"""Packed coordinates of the Runge–Kutta state (m, vec Σ): v = (m, Σ_ij for i ≤ j), and
DOP853 on them with the full state's error norm (`_PackedDOP853`); the full, symmetric states
of the stored outputs (`_states`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
from scipy.integrate import DOP853

from .constants import PACK_MIN_D

__all__: list[str] = []


class _Packing:
    """The packed coordinates v = (m, Σ_ij for i ≤ j) of a state y = (m, vec Σ) with k mean
    entries (k = 0 or d) and Σ symmetric d × d, from d = PACK_MIN_D on: v = y[pack],
    y = v[unpack]; `weight` the error-norm weight of each entry of v, √2 for Σ_ij with i < j
    (it stands for the two equal entries Σ_ij, Σ_ji of y), else 1, so that Σ_v (w e/s)² is the
    full state's Σ_y (e/s)² for errors e and scales s of y that are symmetric in Σ; `diagonal`
    the positions of Σ_ii in v. Below PACK_MIN_D, v = y (pack and unpack None, weights 1).
    `outputs` maps the entries of y to those of the stored state (v, or y itself below
    PACK_MIN_D) that give them, Σ_ij and Σ_ji both from Σ_ij with i ≤ j (`_states`).
    One per (k, d) (`_packing`)."""

    def __init__(self, k: int, d: int) -> None:
        self.n = k + d * d
        self.pack: np.ndarray | None = None
        self.unpack: np.ndarray | None = None
        self.weight = np.ones(self.n)
        self.diagonal = k + np.arange(d) * (d + 1)
        if d < PACK_MIN_D:
            self.outputs = _mirror(k, d)
            return
        rows, cols = np.triu_indices(d)
        where = np.empty((d, d), dtype=np.intp)
        where[rows, cols] = where[cols, rows] = k + np.arange(rows.size)
        self.pack = np.concatenate([np.arange(k), k + rows * d + cols])
        self.unpack = self.outputs = np.concatenate([np.arange(k), where.ravel()])
        self.weight = np.concatenate([np.ones(k), np.where(rows == cols, 1.0, math.sqrt(2.0))])
        self.diagonal = where[np.arange(d), np.arange(d)]

    def packed(self, y: np.ndarray) -> np.ndarray:
        """v of the full state y."""
        return y if self.pack is None else y[self.pack]

    def full(self, v: np.ndarray) -> np.ndarray:
        """y of the packed state v."""
        return v if self.unpack is None else v[self.unpack]

    def fun(self, rhs: Callable[[float, np.ndarray], np.ndarray]
            ) -> Callable[[float, np.ndarray], np.ndarray]:
        """The right-hand side on v of rhs on y."""
        pack, unpack = self.pack, self.unpack
        if pack is None or unpack is None:
            return rhs

        def packed(t: float, v: np.ndarray) -> np.ndarray:
            return rhs(t, v.take(unpack)).take(pack)  # (take: faster than v[unpack])
        return packed

    def trace(self, v: np.ndarray) -> float:
        """tr Σ of the packed state v."""
        return float(v.take(self.diagonal).sum())

    def states(self, blocks: list[np.ndarray]) -> np.ndarray:
        """The full states of the stored (v.size, k_i) blocks (a state per column), each Σ
        symmetric (`_states` with `outputs`)."""
        return _states(blocks, self.outputs)


@functools.lru_cache(maxsize=8)
def _packing(k: int, d: int) -> _Packing:
    """The packing of (k, d), built once."""
    return _Packing(k, d)


class _PackedDOP853(DOP853):
    """scipy's DOP853 on a packed state (`_Packing`) whose error norm is the full state's:
    the scaled errors weighted by `_Packing.weight`, their mean over the full state's n
    entries. f0 = fun(t0, y0), already evaluated, is DOP853's first right-hand side; after the
    start the steps call fun itself, without scipy's wrappers (an evaluation count and an array
    conversion per call: fun returns float64 arrays)."""

    def __init__(self, fun: Callable[[float, np.ndarray], np.ndarray], t0: float,
                 y0: np.ndarray, t_bound: float, *, rtol: float, atol: np.ndarray,
                 packing: _Packing, f0: np.ndarray) -> None:
        start = [f0]

        def first(t: float, y: np.ndarray) -> np.ndarray:  # DOP853's first call is f(t0, y0)
            return start.pop() if start else fun(t, y)
        super().__init__(first, t0, y0, t_bound, rtol=rtol, atol=atol)
        self.fun = fun
        self._inverse_weight = None if packing.pack is None else 1.0 / packing.weight
        self._to_full = math.sqrt(packing.weight.size / packing.n)

    def _estimate_error_norm(self, K: np.ndarray, h: float, scale: np.ndarray) -> float:
        if self._inverse_weight is None:
            return float(super()._estimate_error_norm(K, h, scale))
        return float(super()._estimate_error_norm(K, h, scale * self._inverse_weight)) \
            * self._to_full


def _states(blocks: list[np.ndarray], index: np.ndarray) -> np.ndarray:
    """The states of the (m, k_i) blocks (a state per column, as DOP853's continuous extension
    gives them) as one (index.size, Σ k_i) array in solve_ivp's layout, stored time-major (each
    state contiguous, so that Σ(t_1..t_k) is a (k, d, d) view): entry i of a state is entry
    index[i] of its column (`_Packing.outputs`: every Σ_ji read from Σ_ij with i ≤ j, so each
    Σ is symmetric). Gathered block by block into place from each block made time-major (one
    small copy), no joined copy of all blocks held beside the result (at d = 768 each state
    has 590 000 entries); blocks of fewer than 2^15 entries in all are joined first (at d = 8
    the per-block work costs more than the gather)."""
    rows = [block.T for block in blocks]  # (k_i, m): a state per row
    Y = np.empty((sum(row.shape[0] for row in rows), index.size))
    if len(rows) > 1 and Y.size <= 2**15:
        rows = [np.concatenate(rows)]
    start = 0
    for row in rows:
        stop = start + row.shape[0]
        np.take(np.ascontiguousarray(row), index, axis=1, out=Y[start:stop])
        start = stop
    return Y.T


@functools.lru_cache(maxsize=8)
def _mirror(k: int, d: int) -> np.ndarray:
    """The index of y = (m, vec Σ) (k mean entries) that reads every Σ_ij from Σ_min(i,j)max(i,j):
    y[index] is y with Σ replaced by its upper triangle mirrored."""
    i, j = np.divmod(np.arange(d * d), d)
    return np.concatenate([np.arange(k), k + np.minimum(i, j) * d + np.maximum(i, j)])
