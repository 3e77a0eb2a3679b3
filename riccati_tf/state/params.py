"""The controls and the state of SPEC §1–§2: layer parameters and Gaussian token clouds.

A layer acts on tokens by the velocity field

    X[μ](x) = A x + b + Σ_h V_h ∫ y exp(⟨B_h x, y⟩) dμ(y) / ∫ exp(⟨B_h x, y⟩) dμ(y),

which, for μ = N(m, Σ), is affine: X(x) = M x + c with M = A + Σ_h V_h Σ B_h, c = b + Σ_h V_h m.
A head is given densely, (V_h, B_h), or by its low-rank factors `Head(Q, K, V, O)` with
B_h = KᵀQ and V_h = OV; the moment right-hand side, rk flows and layers then never form the
d×d matrices (`Params.stack`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..errors import InvalidInputError, SolverError
from .validation import (
    as_array,
    as_count,
    as_covariance,
    as_generator,
    as_matrix,
    as_time,
    as_vector,
    psd_rank,
    scale_exponent,
)

#: relative tolerance to call a value matrix scalar: ‖V − (tr V / d) I‖_F ≤ SCALAR_RTOL ‖V‖_F
SCALAR_RTOL = 1e-13
#: the most numbers one call of Gaussian.sample returns (n·d; 800 MB of float64): draw in batches
MAX_SAMPLE_ENTRIES = 100_000_000


@dataclass(frozen=True, eq=False)
class Head:
    """One attention head kept as its low-rank factors:

        B_h = Kᵀ Q   (Q, K ∈ R^{r×d}),     V_h = O V   (V ∈ R^{s×d}, O ∈ R^{d×s}),

    so that V_h Σ B_h Σ = O (V Σ Kᵀ)(Q Σ) costs O(d² (r + s)) instead of O(d³). The logit scale
    is folded in by the caller (an encoder head with logit s⟨W_Q x, W_K y⟩ is
    Head(Q=s·W_Q, K=W_K, V=W_V, O=W_O)). Entries are converted by the policy of
    `riccati_tf.state.validation` (finite reals only); r, s ≥ 1. The dense d×d matrices are
    `Head.pair` = (V_h, B_h), computed on first use.
    """

    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    O: np.ndarray

    def __post_init__(self):
        Q, K, V, O = (as_array(f"Head {n}", getattr(self, n), ndim=2) for n in "QKVO")
        d = Q.shape[1]
        if Q.shape[0] == 0 or V.shape[0] == 0 or d == 0:
            raise InvalidInputError(f"Head factors must have rank ≥ 1 and d ≥ 1, got Q {Q.shape} "
                                    f"and V {V.shape}")
        if K.shape != Q.shape:
            raise InvalidInputError(f"Head K must have the shape of Q {Q.shape} (B_h = KᵀQ), "
                                    f"got {K.shape}")
        if V.shape[1] != d:
            raise InvalidInputError(f"Head V must be {V.shape[0]}×{d} (d = {d} from Q), "
                                    f"got {V.shape}")
        if O.shape != (d, V.shape[0]):
            raise InvalidInputError(f"Head O must be {d}×{V.shape[0]} (V_h = O V), got {O.shape}")
        for n, arr in zip("QKVO", (Q, K, V, O), strict=True):
            arr.setflags(write=False)
            object.__setattr__(self, n, arr)

    @property
    def d(self) -> int:
        return self.Q.shape[1]

    @cached_property
    def pair(self) -> tuple[np.ndarray, np.ndarray]:
        """The dense (V_h, B_h) = (O V, Kᵀ Q). SolverError when a product overflows float64."""
        with np.errstate(over="ignore", invalid="ignore"):
            V, B = self.O @ self.V, self.K.T @ self.Q
        if not (np.all(np.isfinite(V)) and np.all(np.isfinite(B))):
            raise SolverError("the dense head V_h = OV or B_h = KᵀQ overflows float64: the "
                              "factors are too large to compute with")
        V.setflags(write=False)
        B.setflags(write=False)
        return V, B


class HeadPairs(Sequence):
    """Params.heads: the heads as dense (V_h, B_h) pairs, a factored head's pair formed on first
    access and kept (`Head.pair`)."""

    def __init__(self, entries: tuple):
        self._entries = entries

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, h):
        if isinstance(h, slice):
            return tuple(self[i] for i in range(*h.indices(len(self))))
        e = self._entries[h]
        return e.pair if isinstance(e, Head) else e

    def __repr__(self) -> str:
        return f"HeadPairs({len(self)} heads)"


@dataclass(frozen=True, eq=False)
class _Stack:
    """The factored heads stacked: Vs (S×d) and O (d×S) of all value factors, Q (R×d) of all
    queries; heads of equal ranks (s, r) are adjacent and form one group (rows of Vs, rows of Q,
    their K as a (G, r, d) batch). Σ_h O_h (V_h Σ K_hᵀ) Q_h is O · blockdiag(V_h Σ K_hᵀ) · Q:
    two products with d×S operands and batched small ones."""

    Vs: np.ndarray
    O: np.ndarray
    Q: np.ndarray
    groups: tuple[tuple[slice, slice, np.ndarray], ...]

    def inner(self, VS: np.ndarray, QX: np.ndarray) -> np.ndarray:
        """blockdiag(V_h Σ K_hᵀ) · QX from VS = V_s Σ (S×d) and QX (R×k): S×k."""
        k = QX.shape[1]
        out = np.empty((VS.shape[0], k))
        for rows_s, rows_r, K in self.groups:
            G, r, d = K.shape
            C = VS[rows_s].reshape(G, -1, d) @ K.transpose(0, 2, 1)  # (G, s, r)
            np.matmul(C, QX[rows_r].reshape(G, r, k), out=out[rows_s].reshape(G, -1, k))
        return out


def _stack(heads: list[Head]) -> _Stack | None:
    if not heads:
        return None
    heads = sorted(heads, key=lambda h: (h.V.shape[0], h.Q.shape[0]))
    groups, s0, r0 = [], 0, 0
    for (s, r), members in itertools.groupby(heads, key=lambda h: (h.V.shape[0], h.Q.shape[0])):
        members = list(members)
        G = len(members)
        groups.append((slice(s0, s0 + G * s), slice(r0, r0 + G * r),
                       np.stack([h.K for h in members])))
        s0, r0 = s0 + G * s, r0 + G * r
    return _Stack(np.vstack([h.V for h in heads]), np.hstack([h.O for h in heads]),
                  np.vstack([h.Q for h in heads]), tuple(groups))


@dataclass(frozen=True, eq=False)
class Params:
    """Layer parameters (A, B, V, b) of SPEC §1; `heads=[(V_1, B_1), ...]` for multi-head.

    Each entry of `heads` is a dense pair (V_h, B_h) or a `Head(Q, K, V, O)` with
    B_h = KᵀQ, V_h = OV (low rank: the moment right-hand side, rk flows and layers then cost
    O(d² Σ_h (r_h + s_h)) per head instead of O(d³)). Missing pieces are zero. After
    construction `heads` is always the sequence of dense (V_h, B_h) pairs (`HeadPairs`; a
    factored head's pair is formed on first access) and `factors` holds, per head, its `Head`
    or None for a dense head; `B` and `V` hold the single head's matrices (None for multi-head
    input). `heads` must hold at least one entry: a layer without attention is `Params(A, b=b)`
    (V = B = 0), so an empty list is refused rather than given a second meaning. Entries are
    converted by the policy of `riccati_tf.state.validation` (finite reals only; no complex, bool or
    string entries; d ≥ 1).
    """

    A: np.ndarray
    B: np.ndarray | None = None
    V: np.ndarray | None = None
    b: np.ndarray | None = None
    heads: Sequence[tuple[np.ndarray, np.ndarray]] | None = field(default=None)

    def __post_init__(self):
        A = as_matrix("A", self.A)
        d = A.shape[0]
        if self.heads is not None:
            if self.B is not None or self.V is not None:
                raise InvalidInputError("give either B and V (one head) or heads=[(V_1, B_1), ...],"
                                        " not both")
            if isinstance(self.heads, str | bytes | dict | set | frozenset | np.ndarray):
                raise InvalidInputError(f"heads must be a list of (V_h, B_h) pairs, got a "
                                        f"{type(self.heads).__name__}")
            try:
                pairs = (list(self.heads._entries) if isinstance(self.heads, HeadPairs)
                         else list(self.heads))
            except TypeError:
                raise InvalidInputError("heads must be a list of (V_h, B_h) pairs") from None
            if not pairs:
                raise InvalidInputError("heads is empty: give at least one (V_h, B_h) pair, or "
                                        "omit heads (and B, V) for a layer without attention")
            heads = [self._entry(h, pair, d) for h, pair in enumerate(pairs)]
            B = V = None
        else:
            B = np.zeros((d, d)) if self.B is None else as_matrix("B", self.B, d)
            V = np.zeros((d, d)) if self.V is None else as_matrix("V", self.V, d)
            heads = [(V, B)]
        b = np.zeros(d) if self.b is None else as_vector("b", self.b, d)
        for arr in [A, b, *(m for pair in heads if not isinstance(pair, Head) for m in pair)]:
            arr.setflags(write=False)
        object.__setattr__(self, "A", A)
        object.__setattr__(self, "B", B)
        object.__setattr__(self, "V", V)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "heads", HeadPairs(tuple(heads)))

    @staticmethod
    def _entry(h: int, pair, d: int):
        if isinstance(pair, Head):
            if pair.d != d:
                raise InvalidInputError(f"heads[{h}] is a Head on R^{pair.d} (Q is "
                                        f"{pair.Q.shape[0]}×{pair.d}), but A is {d}×{d}")
            return pair
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise InvalidInputError(f"heads[{h}] must be a pair (V_h, B_h) or a Head(Q, K, V, O)")
        return (as_matrix(f"heads[{h}] V", pair[0], d), as_matrix(f"heads[{h}] B", pair[1], d))

    @property
    def factors(self) -> tuple[Head | None, ...]:
        """Per head its `Head` factors, or None for a head given as a dense (V_h, B_h) pair."""
        return tuple(e if isinstance(e, Head) else None for e in self.heads._entries)

    @cached_property
    def dense_pairs(self) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        """The heads given as dense (V_h, B_h) pairs (the factored ones excluded)."""
        return tuple(e for e in self.heads._entries if not isinstance(e, Head))

    @cached_property
    def stack(self) -> _Stack | None:
        """The factored heads stacked for the fast products (`_Stack`), None without any."""
        return _stack([e for e in self.heads._entries if isinstance(e, Head)])

    @cached_property
    def value_sum(self) -> np.ndarray:
        """Σ_h V_h (the mean's linear part A + Σ_h V_h at Σ = 0)."""
        out = sum((V for V, _ in self.dense_pairs), np.zeros((self.d, self.d)))
        if self.stack is not None:
            out = out + self.stack.O @ self.stack.Vs
        out.setflags(write=False)
        return out

    def arrays(self):
        """Every array the layer holds (A, b, dense pairs, factors): for finiteness checks."""
        yield self.A
        yield self.b
        for e in self.heads._entries:
            yield from ((e.Q, e.K, e.V, e.O) if isinstance(e, Head) else e)

    @property
    def d(self) -> int:
        return self.A.shape[0]

    def M(self, cov: np.ndarray) -> np.ndarray:
        """Linear part of the field at covariance Σ: M = A + Σ_h V_h Σ B_h (factored heads:
        O · blockdiag(V_h Σ K_hᵀ) · Q)."""
        st = self.stack
        if st is None:
            out = self.A.copy()
        else:
            out = st.O @ st.inner(st.Vs @ cov, st.Q)
            out += self.A
        for V, B in self.dense_pairs:
            out += (V @ cov) @ B
        return out

    def c(self, mean: np.ndarray) -> np.ndarray:
        """Constant part of the field at mean m: c = b + Σ_h V_h m."""
        return self.b + self.value_sum @ mean

    @cached_property
    def value_scalars(self) -> tuple[float, ...] | None:
        """(v_1, ..., v_H) when every value matrix is V_h = v_h I (the Riccati case), else None.

        The test runs on V_h scaled by a power of two, so it holds at every magnitude. A
        factored head of value rank s < d has V_h = v I only for V_h = 0 (‖V_h − wI‖_F ≥ |w| on
        the null space and ≥ ‖V_h‖ − |w|√d elsewhere); B_h is never formed here."""
        out = []
        for entry in self.heads._entries:
            if isinstance(entry, Head):
                with np.errstate(over="ignore", invalid="ignore"):
                    V = entry.O @ entry.V
                if not np.all(np.isfinite(V)) or (entry.V.shape[0] < self.d and np.any(V)):
                    return None  # an overflowing V_h is left to the flows, which refuse it
            else:
                V = entry[0]
            e = scale_exponent(V)
            W = np.ldexp(V, -e) if e else V
            w = np.trace(W) / self.d
            if np.linalg.norm(W - w * np.eye(self.d)) > SCALAR_RTOL * np.linalg.norm(W):
                return None
            try:
                v = math.ldexp(float(w), e)
            except OverflowError:  # the mean of the diagonal rounded past the largest float
                v = float(V[0, 0])
            out.append(v)
        return tuple(out)

    @cached_property
    def G(self) -> np.ndarray:
        """G = −Σ_h v_h (B_h + B_hᵀ), so that Σ̇ = AΣ + ΣAᵀ − ΣGΣ (SPEC §5). Scalar V only.

        Raises SolverError when G overflows float64 (|v_h| ‖B_h‖ near 1e308)."""
        vs = self.value_scalars
        if vs is None:
            raise InvalidInputError("G is defined only for scalar value matrices V_h = v_h I")
        pairs = list(zip(vs, self.heads, strict=True))
        with np.errstate(over="ignore", invalid="ignore"):
            G = -sum(v * (B + B.T) for v, (_, B) in pairs)
            if not np.all(np.isfinite(G)):  # B + Bᵀ may overflow where v (B + Bᵀ) does not
                G = -sum(v * B + v * B.T for v, (_, B) in pairs)
        if not np.all(np.isfinite(G)):
            raise SolverError("G = −Σ_h v_h (B_h + B_hᵀ) overflows float64: the attention "
                              "weights are too large to compute with")
        G.setflags(write=False)
        return G

    def __repr__(self) -> str:
        return f"Params(d={self.d}, heads={len(self.heads)}, scalar_V={self.value_scalars})"


@dataclass(frozen=True, eq=False)
class Gaussian:
    """A Gaussian N(mean, cov) on R^d; cov symmetric PSD (singular covariances are legal)."""

    mean: np.ndarray
    cov: np.ndarray

    def __post_init__(self):
        cov = as_covariance("cov", self.cov)
        mean = as_vector("mean", self.mean, cov.shape[0])
        cov.setflags(write=False)
        mean.setflags(write=False)
        object.__setattr__(self, "cov", cov)
        object.__setattr__(self, "mean", mean)

    @property
    def d(self) -> int:
        return self.cov.shape[0]

    def rank(self, tol: float | None = None) -> int:
        """Number of eigenvalues of cov above tol (default d·eps·λ_max)."""
        return psd_rank(self.cov, None if tol is None else as_time("tol", tol, allow_zero=True))

    def sample(self, n: int, rng=None) -> np.ndarray:
        """n ≥ 0 samples as an (n, d) array (works for singular covariances).

        rng: None (fresh entropy), an integer seed ≥ 0 or a numpy.random.Generator, as in
        scipy.stats. At most MAX_SAMPLE_ENTRIES numbers (n·d) per call. The root of Σ is taken
        on Σ scaled by a power of 4, so samples are finite at every magnitude (|x − m| is at
        most |z| √λ_max(Σ) ≈ 1e154 |z|, far below the spacing of floats near 1.8e308).
        """
        n = as_count("n", n, minimum=0)
        if n * self.d > MAX_SAMPLE_ENTRIES:
            raise InvalidInputError(f"n·d = {n}·{self.d} exceeds {MAX_SAMPLE_ENTRIES} numbers per "
                                    f"call; draw the samples in batches")
        rng = as_generator("rng", rng)
        e = scale_exponent(self.cov, even=True)
        eig, vec = np.linalg.eigh(np.ldexp(self.cov, -e) if e else self.cov)
        root = vec * np.sqrt(np.clip(eig, 0.0, None))
        if e:
            root = np.ldexp(root, e // 2)
        return self.mean + rng.standard_normal((n, self.d)) @ root.T

    def __repr__(self) -> str:
        return f"Gaussian(d={self.d}, rank={self.rank()})"


def check_dims(params: Params, gaussian: Gaussian) -> None:
    """Raise unless the layer and the Gaussian live in the same R^d."""
    if not isinstance(params, Params):
        raise InvalidInputError(f"params must be a riccati_tf.Params, got {type(params).__name__}")
    if not isinstance(gaussian, Gaussian):
        raise InvalidInputError(f"gaussian must be a riccati_tf.Gaussian, "
                                f"got {type(gaussian).__name__}")
    if params.d != gaussian.d:
        raise InvalidInputError(f"dimension mismatch: the parameters act on R^{params.d} but the "
                                f"Gaussian lives in R^{gaussian.d}")
