"""The controls and the state of SPEC §1–§2: layer parameters and Gaussian token clouds.

A layer acts on tokens by the velocity field

    X[μ](x) = A x + b + Σ_h V_h ∫ y exp(⟨B_h x, y⟩) dμ(y) / ∫ exp(⟨B_h x, y⟩) dμ(y),

which, for μ = N(m, Σ), is affine: X(x) = M x + c with M = A + Σ_h V_h Σ B_h, c = b + Σ_h V_h m.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .errors import InvalidInputError
from .validation import as_covariance, as_matrix, as_vector, psd_rank

#: relative tolerance to call a value matrix scalar: ‖V − (tr V / d) I‖_F ≤ SCALAR_RTOL ‖V‖_F
SCALAR_RTOL = 1e-13


@dataclass(frozen=True, eq=False)
class Params:
    """Layer parameters (A, B, V, b) of SPEC §1; `heads=[(V_1, B_1), ...]` for multi-head.

    Missing pieces are zero. After construction `heads` is always a tuple of (V_h, B_h) pairs;
    `B` and `V` hold the single head's matrices (None for multi-head input).
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
            try:
                pairs = list(self.heads)
            except TypeError:
                raise InvalidInputError("heads must be a list of (V_h, B_h) pairs") from None
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
        """(v_1, ..., v_H) when every value matrix is V_h = v_h I (the Riccati case), else None."""
        out = []
        for V, _ in self.heads:
            v = np.trace(V) / self.d
            if np.linalg.norm(V - v * np.eye(self.d)) > SCALAR_RTOL * np.linalg.norm(V):
                return None
            out.append(float(v))
        return tuple(out)

    @cached_property
    def G(self) -> np.ndarray:
        """G = −Σ_h v_h (B_h + B_hᵀ), so that Σ̇ = AΣ + ΣAᵀ − ΣGΣ (SPEC §5). Scalar V only."""
        vs = self.value_scalars
        if vs is None:
            raise InvalidInputError("G is defined only for scalar value matrices V_h = v_h I")
        G = -sum(v * (B + B.T) for v, (_, B) in zip(vs, self.heads, strict=True))
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
        return psd_rank(self.cov, tol)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n samples as an (n, d) array (works for singular covariances)."""
        eig, vec = np.linalg.eigh(self.cov)
        root = vec * np.sqrt(np.clip(eig, 0.0, None))
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
