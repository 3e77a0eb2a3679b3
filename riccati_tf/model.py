"""The controls and the state of SPEC §1–§2: layer parameters and Gaussian token clouds.

A layer acts on tokens by the velocity field

    X[μ](x) = A x + b + Σ_h V_h ∫ y exp(⟨B_h x, y⟩) dμ(y) / ∫ exp(⟨B_h x, y⟩) dμ(y),

which, for μ = N(m, Σ), is affine: X(x) = M x + c with M = A + Σ_h V_h Σ B_h, c = b + Σ_h V_h m.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .errors import InvalidInputError, SolverError
from .validation import (
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
class Params:
    """Layer parameters (A, B, V, b) of SPEC §1; `heads=[(V_1, B_1), ...]` for multi-head.

    Missing pieces are zero. After construction `heads` is always a tuple of (V_h, B_h) pairs;
    `B` and `V` hold the single head's matrices (None for multi-head input). `heads` must hold
    at least one pair: a layer without attention is `Params(A, b=b)` (V = B = 0), so an empty
    list is refused rather than given a second meaning. Entries are converted by the policy of
    `riccati_tf.validation` (finite reals only; no complex, bool or string entries; d ≥ 1).
    """

    A: np.ndarray
    B: np.ndarray | None = None
    V: np.ndarray | None = None
    b: np.ndarray | None = None
    heads: tuple[tuple[np.ndarray, np.ndarray], ...] | None = field(default=None)

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
                pairs = list(self.heads)
            except TypeError:
                raise InvalidInputError("heads must be a list of (V_h, B_h) pairs") from None
            if not pairs:
                raise InvalidInputError("heads is empty: give at least one (V_h, B_h) pair, or "
                                        "omit heads (and B, V) for a layer without attention")
            heads = []
            for h, pair in enumerate(pairs):
                if not isinstance(pair, tuple | list) or len(pair) != 2:
                    raise InvalidInputError(f"heads[{h}] must be a pair (V_h, B_h)")
                heads.append((as_matrix(f"heads[{h}] V", pair[0], d),
                              as_matrix(f"heads[{h}] B", pair[1], d)))
            B = V = None
        else:
            B = np.zeros((d, d)) if self.B is None else as_matrix("B", self.B, d)
            V = np.zeros((d, d)) if self.V is None else as_matrix("V", self.V, d)
            heads = [(V, B)]
        b = np.zeros(d) if self.b is None else as_vector("b", self.b, d)
        for arr in [A, b, *(m for pair in heads for m in pair)]:
            arr.setflags(write=False)
        object.__setattr__(self, "A", A)
        object.__setattr__(self, "B", B)
        object.__setattr__(self, "V", V)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "heads", tuple(heads))

    @property
    def d(self) -> int:
        return self.A.shape[0]

    def M(self, cov: np.ndarray) -> np.ndarray:
        """Linear part of the field at covariance Σ: M = A + Σ_h V_h Σ B_h."""
        return self.A + sum(V @ cov @ B for V, B in self.heads)

    def c(self, mean: np.ndarray) -> np.ndarray:
        """Constant part of the field at mean m: c = b + Σ_h V_h m."""
        return self.b + sum(V @ mean for V, _ in self.heads)

    @cached_property
    def value_scalars(self) -> tuple[float, ...] | None:
        """(v_1, ..., v_H) when every value matrix is V_h = v_h I (the Riccati case), else None.

        The test runs on V_h scaled by a power of two, so it holds at every magnitude."""
        out = []
        for V, _ in self.heads:
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
