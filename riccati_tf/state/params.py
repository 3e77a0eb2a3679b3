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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from ..display import array_text, html_table, number
from ..errors import InvalidInputError, SolverError
from .validation import (
    ReadOnlyArrays,
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

__all__ = ["MAX_SAMPLE_ENTRIES", "SCALAR_RTOL", "Gaussian", "Head", "Params"]

#: relative tolerance to call a value matrix scalar: ‖V − (tr V / d) I‖_F ≤ SCALAR_RTOL ‖V‖_F
SCALAR_RTOL = 1e-13
#: the most numbers one call of Gaussian.sample returns (n·d; 800 MB of float64): draw in batches
MAX_SAMPLE_ENTRIES = 100_000_000


@dataclass(frozen=True, eq=False)
class Head(ReadOnlyArrays):
    """One attention head kept as its low-rank factors.

    The head's query–key and value matrices are

        B_h = Kᵀ Q   (Q, K ∈ R^{r×d}),     V_h = O V   (V ∈ R^{s×d}, O ∈ R^{d×s}),

    so that the attention term V_h Σ B_h Σ = O (V Σ Kᵀ)(Q Σ) of the covariance equation costs
    O(d² (r + s)) instead of O(d³). The logit scale is folded in by the caller (an encoder head
    with logit s⟨W_Q x, W_K y⟩ is Head(Q=s·W_Q, K=W_K, V=W_V, O=W_O)). The factors are stored
    read-only; the dense d×d matrices are `Head.pair` = (V_h, B_h), computed on first use.

    Parameters
    ----------
    Q : (r, d) array_like of float
        Query factor, r ≥ 1.
    K : (r, d) array_like of float
        Key factor, of the shape of Q.
    V : (s, d) array_like of float
        Value factor, s ≥ 1.
    O : (d, s) array_like of float
        Output factor.

    Raises
    ------
    InvalidInputError
        When an entry is refused by the conversion policy of `riccati_tf.state.validation`
        (NaN or Inf, non-numbers), a factor is not 2-D, r, s or d is 0, or the shapes do not
        match: K of the shape of Q, V with d columns, O of shape (d, s).

    See Also
    --------
    Params : a layer whose heads are dense pairs or `Head` factors.
    riccati_tf.moment_rhs : the moment equations, computed from the factors.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures"
       (B = Kᵀ Q for the usual ⟨Qx, Ky⟩; multi-head).

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf import Gaussian, Head, Params, moment_rhs
    >>> rng = np.random.default_rng(0)
    >>> Q, K = rng.standard_normal((1, 3)), rng.standard_normal((1, 3))
    >>> V, O = rng.standard_normal((1, 3)), rng.standard_normal((3, 1))
    >>> head = Head(Q, K, V, O)
    >>> V_h, B_h = head.pair
    >>> bool(np.allclose(B_h, K.T @ Q)), int(np.linalg.matrix_rank(B_h))
    (True, 1)

    The moment equations are the same whether the head is given by its factors or densely:

    >>> g = Gaussian(np.ones(3), np.eye(3))
    >>> _, dS_factored = moment_rhs(Params(np.eye(3), heads=[head]), g)
    >>> _, dS_dense = moment_rhs(Params(np.eye(3), heads=[head.pair]), g)
    >>> bool(np.allclose(dS_factored, dS_dense))
    True
    """

    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    O: np.ndarray

    def __post_init__(self) -> None:
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
        """The dimension d of the tokens the head acts on."""
        return self.Q.shape[1]

    def __repr__(self) -> str:
        r, s = self.Q.shape[0], self.V.shape[0]
        return f"Head(d={self.d}, query–key rank ≤ {r}, value rank ≤ {s})"

    @cached_property
    def pair(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """The dense (V_h, B_h) = (O V, Kᵀ Q). SolverError when a product overflows float64."""
        with np.errstate(over="ignore", invalid="ignore"):
            V, B = self.O @ self.V, self.K.T @ self.Q
        if not (np.all(np.isfinite(V)) and np.all(np.isfinite(B))):
            raise SolverError("the dense head V_h = OV or B_h = KᵀQ overflows float64: the "
                              "factors are too large to compute with")
        V.setflags(write=False)
        B.setflags(write=False)
        return V, B


#: one head as Params holds it: a dense pair (V_h, B_h) or its factors
HeadEntry = Head | tuple[np.ndarray, np.ndarray]


class HeadPairs(ReadOnlyArrays, Sequence[tuple[np.ndarray, np.ndarray]]):
    """Params.heads: the heads as dense (V_h, B_h) pairs, a factored head's pair formed on first
    access and kept (`Head.pair`)."""

    def __init__(self, entries: tuple[HeadEntry, ...]) -> None:
        self._entries = entries

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, h: Any) -> Any:
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
    the number G of its heads, their K as a (G, r, d) batch or None when every K of the group is
    the identity, as for a dense B_h kept whole as Q = B_h, K = I). Σ_h O_h (V_h Σ K_hᵀ) Q_h is
    O · blockdiag(V_h Σ K_hᵀ) · Q: two products with d×S operands and batched small ones."""

    Vs: np.ndarray
    O: np.ndarray
    Q: np.ndarray
    groups: tuple[tuple[slice, slice, int, np.ndarray | None], ...]

    def product(self, cov: np.ndarray) -> np.ndarray:
        """Σ_h O_h V_h Σ K_hᵀ Q_h = O · blockdiag(V_h Σ K_hᵀ) · Q at Σ = cov (d×d): per group
        two batched products (one group, every head of one rank as in real layers: no copy)."""
        VS = self.Vs @ cov
        d = VS.shape[1]
        blocks = []
        for rows_s, rows_r, G, K in self.groups:
            C = VS[rows_s].reshape(G, -1, d)  # (G, s, d): V_h Σ
            if K is not None:
                C = C @ K.transpose(0, 2, 1)  # (G, s, r): V_h Σ K_hᵀ
            blocks.append((C @ self.Q[rows_r].reshape(G, C.shape[2], d)).reshape(-1, d))
        return self.O @ (blocks[0] if len(blocks) == 1 else np.concatenate(blocks))


def _stack(heads: list[Head]) -> _Stack | None:
    if not heads:
        return None
    heads = sorted(heads, key=lambda h: (h.V.shape[0], h.Q.shape[0]))
    groups, s0, r0 = [], 0, 0
    for (s, r), members in itertools.groupby(heads, key=lambda h: (h.V.shape[0], h.Q.shape[0])):
        group = list(members)
        G = len(group)
        identity = r == group[0].d and all(np.array_equal(h.K, np.eye(r)) for h in group)
        groups.append((slice(s0, s0 + G * s), slice(r0, r0 + G * r), G,
                       None if identity else np.stack([h.K for h in group])))
        s0, r0 = s0 + G * s, r0 + G * r
    return _Stack(np.vstack([h.V for h in heads]), np.hstack([h.O for h in heads]),
                  np.vstack([h.Q for h in heads]), tuple(groups))


@dataclass(frozen=True, eq=False, init=False)
class Params(ReadOnlyArrays):
    """Layer parameters (A, B, V, b) of SPEC §1, one head or several: the controls of the flow.

    A layer moves the tokens by the velocity field X[μ](x) = A x + b + Σ_h V_h ∫ y
    softmax(⟨B_h x, y⟩) dμ(y), which for μ = N(m, Σ) is affine:

        X(x) = M x + c,   M = A + Σ_h V_h Σ B_h,   c = b + Σ_h V_h m.

    One head is given by `B` and `V`, several by `heads=[(V_1, B_1), ...]`. Each entry of
    `heads` is a dense pair (V_h, B_h) or a `Head(Q, K, V, O)` with B_h = KᵀQ, V_h = OV (low
    rank: the moment right-hand side, rk flows and layers then cost O(d² Σ_h (r_h + s_h)) per
    head instead of O(d³)). Missing pieces are zero. All arrays are stored read-only.

    After construction `heads` is always the sequence of dense (V_h, B_h) pairs (`HeadPairs`;
    a factored head's pair is formed on first access) and `factors` holds, per head, its
    `Head` or None for a dense head; `B` and `V` hold the single head's matrices (None for
    multi-head input). `value_scalars` is (v_1, ..., v_H) when every V_h = v_h I (the Riccati
    case of SPEC §5, tested to SCALAR_RTOL), and then `G` = −Σ_h v_h (B_h + B_hᵀ), so that
    Σ̇ = AΣ + ΣAᵀ − ΣGΣ.

    Parameters
    ----------
    A : (d, d) array_like of float, optional
        Feed-forward matrix, d ≥ 1 (a scalar for d = 1); default 0, with d read from B, V,
        the first head or b.
    B : (d, d) array_like of float, optional
        Query–key matrix of a single head (default 0).
    V : (d, d) array_like of float, optional
        Value matrix of a single head (default 0).
    b : (d,) array_like of float, optional
        Bias (default 0).
    heads : sequence of (V_h, B_h) pairs or Head, optional
        Several heads instead of `B` and `V`: each entry a pair of (d, d) array_like or a
        `Head`. At least one entry: a layer without attention is ``Params(A, b=b)``
        (V = B = 0), so an empty list is refused rather than given a second meaning.

    Raises
    ------
    InvalidInputError
        When an entry is refused by the conversion policy of `riccati_tf.state.validation`
        (NaN or Inf, complex, bool or string entries), a matrix is not square or not d×d, b
        is not of length d, `heads` is given together with `B` or `V`, is not a non-empty
        sequence of pairs or `Head` objects, or holds a `Head` on another R^d.

    See Also
    --------
    Head : a head given by its low-rank factors.
    Gaussian : the state the layer acts on.
    riccati_tf.flow : the continuous-depth flow of a layer.
    riccati_tf.layers : discrete residual layers.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures".
    .. [2] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".
    .. [3] B. Geshkovski, C. Letrouit, Y. Polyanskiy, P. Rigollet, "A mathematical perspective
       on Transformers", arXiv:2312.10794, 2023.

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf import Params
    >>> p = Params(A=-np.eye(2), B=np.eye(2), V=0.5 * np.eye(2))
    >>> p
    Params(A=[[-1, 0], [0, -1]], b=[0, 0], B=[[1, 0], [0, 1]], V=[[0.5, 0], [0, 0.5]])
    >>> p.value_scalars
    (0.5,)
    >>> bool(np.allclose(p.G, -np.eye(2)))
    True
    >>> np.round(p.M(np.eye(2)), 4)
    array([[-0.5,  0. ],
           [ 0. , -0.5]])

    Two heads, one of them with a non-scalar value matrix:

    >>> p2 = Params(np.zeros((2, 2)), heads=[(np.eye(2), np.eye(2)),
    ...                                     (np.diag([1.0, 2.0]), np.eye(2))])
    >>> len(p2.heads), p2.value_scalars
    (2, None)
    """

    A: np.ndarray
    B: np.ndarray | None
    V: np.ndarray | None
    b: np.ndarray
    heads: HeadPairs

    def __init__(self, A: npt.ArrayLike | None = None, B: npt.ArrayLike | None = None,
                 V: npt.ArrayLike | None = None, b: npt.ArrayLike | None = None,
                 heads: Sequence[Head | tuple[npt.ArrayLike, npt.ArrayLike]] | None = None
                 ) -> None:
        if A is None:
            A = np.zeros((self._dimension(B, V, b, heads),) * 2)
        A = as_matrix("A", A)
        d = A.shape[0]
        entries: list[HeadEntry]
        if heads is not None:
            if B is not None or V is not None:
                raise InvalidInputError("give either B and V (one head) or heads=[(V_1, B_1), ...],"
                                        " not both")
            if isinstance(heads, str | bytes | dict | set | frozenset | np.ndarray | Head):
                one = " (one head: heads=[head])" if isinstance(heads, Head) else ""
                raise InvalidInputError(f"heads must be a list of (V_h, B_h) pairs or Head "
                                        f"factors, got a {type(heads).__name__}{one}")
            try:
                pairs = list(heads._entries) if isinstance(heads, HeadPairs) else list(heads)
            except TypeError:
                raise InvalidInputError(f"heads must be a list of (V_h, B_h) pairs or Head "
                                        f"factors, got a {type(heads).__name__}") from None
            if not pairs:
                raise InvalidInputError("heads is empty: give at least one (V_h, B_h) pair, or "
                                        "omit heads (and B, V) for a layer without attention")
            entries = [self._entry(h, pair, d) for h, pair in enumerate(pairs)]
            B = V = None
        else:
            B = np.zeros((d, d)) if B is None else as_matrix("B", B, d)
            V = np.zeros((d, d)) if V is None else as_matrix("V", V, d)
            entries = [(V, B)]
        b = np.zeros(d) if b is None else as_vector("b", b, d)
        for arr in [A, b, *(m for pair in entries if not isinstance(pair, Head) for m in pair)]:
            arr.setflags(write=False)
        object.__setattr__(self, "A", A)
        object.__setattr__(self, "B", B)
        object.__setattr__(self, "V", V)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "heads", HeadPairs(tuple(entries)))

    @staticmethod
    def _dimension(B: npt.ArrayLike | None, V: npt.ArrayLike | None, b: npt.ArrayLike | None,
                   heads: object) -> int:
        """d of a layer given without A (A = 0): from B, V, the first head or b; 1 for heads
        that are not a readable sequence of pairs, which the checks of `heads` then refuse
        with their own message."""
        if B is not None:
            return as_matrix("B", B).shape[0]
        if V is not None:
            return as_matrix("V", V).shape[0]
        if heads is not None:
            if isinstance(heads, HeadPairs):
                heads = list(heads._entries)
            first = heads[0] if isinstance(heads, list | tuple) and heads else None
            if isinstance(first, Head):
                return first.d
            if isinstance(first, tuple | list) and len(first) == 2:
                return as_matrix("heads[0] V", first[0]).shape[0]
            return 1
        if b is not None:
            return as_array("b", b, ndim=1).shape[0]
        raise InvalidInputError("A is missing and nothing else gives the dimension d: give A, "
                                "or B and V, heads or b")

    @staticmethod
    def _entry(h: int, pair: object, d: int) -> HeadEntry:
        if isinstance(pair, Head):
            if pair.d != d:
                raise InvalidInputError(f"heads[{h}] is a Head on R^{pair.d} (Q is "
                                        f"{pair.Q.shape[0]}×{pair.d}), but A is {d}×{d}")
            return pair
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            if isinstance(pair, np.ndarray):
                got = f"an array of shape {pair.shape}"
            elif isinstance(pair, tuple | list):
                got = f"a {type(pair).__name__} of {len(pair)}"
            else:
                got = f"a {type(pair).__name__}"
            raise InvalidInputError(f"heads[{h}] must be a pair (V_h, B_h) or a Head(Q, K, V, O), "
                                    f"got {got} (one head: heads=[(V, B)])")
        return (as_matrix(f"heads[{h}] V", pair[0], d), as_matrix(f"heads[{h}] B", pair[1], d))

    @property
    def _entries(self) -> tuple[HeadEntry, ...]:
        """The heads as given: dense pairs and `Head` factors."""
        return self.heads._entries

    @property
    def factors(self) -> tuple[Head | None, ...]:
        """Per head its `Head` factors, or None for a head given as a dense (V_h, B_h) pair."""
        return tuple(e if isinstance(e, Head) else None for e in self._entries)

    @cached_property
    def dense_pairs(self) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        """The heads given as dense (V_h, B_h) pairs (the factored ones excluded)."""
        return tuple(e for e in self._entries if not isinstance(e, Head))

    @cached_property
    def stack(self) -> _Stack | None:
        """The factored heads stacked for the fast products (`_Stack`), None without any."""
        return _stack([e for e in self._entries if isinstance(e, Head)])

    @cached_property
    def value_sum(self) -> np.ndarray:
        """Σ_h V_h (the mean's linear part A + Σ_h V_h at Σ = 0)."""
        out = sum((V for V, _ in self.dense_pairs), np.zeros((self.d, self.d)))
        if self.stack is not None:
            out = out + self.stack.O @ self.stack.Vs
        out.setflags(write=False)
        return out

    def arrays(self) -> Iterator[np.ndarray]:
        """Every array the layer holds (A, b, dense pairs, factors): for finiteness checks."""
        yield self.A
        yield self.b
        for e in self._entries:
            yield from ((e.Q, e.K, e.V, e.O) if isinstance(e, Head) else e)

    @property
    def d(self) -> int:
        """The dimension d of the tokens."""
        return self.A.shape[0]

    def M(self, cov: np.ndarray) -> npt.NDArray[np.float64]:
        """Linear part of the field at covariance Σ: M = A + Σ_h V_h Σ B_h (factored heads:
        O · blockdiag(V_h Σ K_hᵀ) · Q)."""
        st = self.stack
        if st is None:
            out = self.A.copy()
        else:
            out = st.product(cov)
            out += self.A
        for V, B in self.dense_pairs:
            out += (V @ cov) @ B
        return out

    def c(self, mean: np.ndarray) -> npt.NDArray[np.float64]:
        """Constant part of the field at mean m: c = b + Σ_h V_h m."""
        return self.b + self.value_sum @ mean

    @cached_property
    def value_scalars(self) -> tuple[float, ...] | None:
        """(v_1, ..., v_H) when every value matrix is V_h = v_h I (the Riccati case), else None.

        The test runs on V_h scaled by a power of two, so it holds at every magnitude. A
        factored head of value rank s < d has V_h = v I only for V_h = 0 (‖V_h − wI‖_F ≥ |w| on
        the null space and ≥ ‖V_h‖ − |w|√d elsewhere); B_h is never formed here."""
        out = []
        for entry in self._entries:
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
    def G(self) -> npt.NDArray[np.float64]:
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
        """The matrices written out for d ≤ display.REPR_MAX_D, else d and the head count."""
        A, b = array_text(self.A), array_text(self.b)
        if A is None or b is None:
            return (f"Params(d={self.d}, heads={len(self._entries)}, "
                    f"scalar_V={self.value_scalars})")
        heads = [f"Head(r={e.Q.shape[0]}, s={e.V.shape[0]})" if isinstance(e, Head) else
                 f"(V={array_text(e[0])}, B={array_text(e[1])})" for e in self._entries]
        if self.B is not None and self.V is not None:
            tail = f"B={array_text(self.B)}, V={array_text(self.V)}"
        else:
            tail = f"heads=[{', '.join(heads)}]"
        return f"Params(A={A}, b={b}, {tail})"

    def _repr_html_(self) -> str:
        rows: list[tuple[str, object]] = [
            ("d", self.d), ("heads", len(self._entries)),
            ("scalar V", "no" if self.value_scalars is None else
             ", ".join(number(v) for v in self.value_scalars)),
            ("A", array_text(self.A) or f"{self.d}×{self.d}"),
            ("b", array_text(self.b) or f"length {self.d}")]
        for h, e in enumerate(self._entries):
            rows.append((f"head {h + 1}", f"Head(Q, K, V, O): rank {e.Q.shape[0]} / "
                         f"{e.V.shape[0]}" if isinstance(e, Head) else
                         f"V = {array_text(e[0]) or '…'}, B = {array_text(e[1]) or '…'}"))
        return html_table("Params", rows)


@dataclass(frozen=True, eq=False)
class Gaussian(ReadOnlyArrays):
    """A Gaussian N(m, Σ) on R^d: the state of the token cloud (SPEC §2).

    An affine field X(x) = M x + c maps Gaussians to Gaussians, so the flow keeps
    μ_t = N(m(t), Σ(t)). The covariance is symmetric positive semidefinite; singular covariances
    are legal (degenerate Gaussians keep their rank along the flow, SPEC §3). Both arrays are
    stored read-only, the covariance symmetrised.

    Parameters
    ----------
    mean : (d,) array_like of float
        The mean m (also (1, d) or (d, 1); a scalar for d = 1).
    cov : (d, d) array_like of float, symmetric positive semidefinite
        The covariance Σ, d ≥ 1.

    Raises
    ------
    InvalidInputError
        When an entry is refused by the conversion policy of `riccati_tf.state.validation`
        (NaN or Inf, non-numbers), cov is not square, not symmetric (to SYM_RTOL) or not
        positive semidefinite (to PSD_RTOL), or mean is not of length d.

    See Also
    --------
    Params : the layer acting on the Gaussian.
    riccati_tf.flow : the Gaussian's trajectory under a layer.
    riccati_tf.moment_rhs : the velocity (ṁ, Σ̇) of the Gaussian.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".
    .. [2] riccati_tf theory, SPEC §3 "Rank invariance".

    Examples
    --------
    A degenerate Gaussian, supported on the line x₂ = x₁ + 1:

    >>> import numpy as np
    >>> from riccati_tf import Gaussian
    >>> g = Gaussian([0.0, 1.0], [[1.0, 1.0], [1.0, 1.0]])
    >>> g
    Gaussian(mean=[0, 1], cov=[[1, 1], [1, 1]])
    >>> g.rank()
    1
    >>> x = g.sample(1000, rng=0)
    >>> x.shape, bool(np.allclose(x[:, 1] - x[:, 0], 1.0))
    ((1000, 2), True)
    """

    mean: np.ndarray
    cov: np.ndarray

    def __init__(self, mean: npt.ArrayLike, cov: npt.ArrayLike) -> None:
        # written out (not generated) so that the types say what is accepted: array-likes, stored
        # as read-only float64 arrays
        cov = as_covariance("cov", cov)
        mean = as_vector("mean", mean, cov.shape[0])
        cov.setflags(write=False)
        mean.setflags(write=False)
        object.__setattr__(self, "cov", cov)
        object.__setattr__(self, "mean", mean)

    @property
    def d(self) -> int:
        """The dimension d."""
        return self.cov.shape[0]

    def rank(self, tol: float | None = None) -> int:
        """Number of eigenvalues of cov above tol (default d·eps·λ_max)."""
        return psd_rank(self.cov, None if tol is None else as_time("tol", tol, allow_zero=True))

    def sample(self, n: int, rng: int | np.random.Generator = 0) -> npt.NDArray[np.float64]:
        """n ≥ 0 samples as an (n, d) array (works for singular covariances).

        rng: an integer seed in [0, MAX_SEED] (default 0) or a numpy.random.Generator; as every
        random entry point of the package (`riccati_tf.state.validation.as_seed`), the draw is
        reproducible: the same seed gives the same samples, None is refused, and a Generator
        passed again draws new samples. At most MAX_SAMPLE_ENTRIES numbers (n·d) per call.
        The root of Σ is taken on Σ scaled by a power of 4, so samples are finite at every
        magnitude (|x − m| is at most |z| √λ_max(Σ) ≈ 1e154 |z|, far below the spacing of
        floats near 1.8e308).
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
        """The mean and covariance written out for d ≤ display.REPR_MAX_D (a constructor call,
        to display.REPR_DIGITS digits), else d and the rank."""
        mean, cov = array_text(self.mean), array_text(self.cov)
        if mean is None or cov is None:
            return f"Gaussian(d={self.d}, rank={self.rank()})"
        return f"Gaussian(mean={mean}, cov={cov})"

    def _repr_html_(self) -> str:
        eig = np.linalg.eigvalsh(self.cov)
        norm = float(np.linalg.norm(self.mean))
        return html_table("Gaussian", [
            ("d", self.d), ("rank", self.rank()),
            ("mean", array_text(self.mean) or f"‖m‖ = {number(norm)}"),
            ("cov", array_text(self.cov) or f"tr Σ = {number(float(np.trace(self.cov)))}"),
            ("eigenvalues of Σ", f"{number(float(eig[0]))} … {number(float(eig[-1]))}")])


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
