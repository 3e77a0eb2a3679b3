"""The moment equations of SPEC §2 in matrix form (the numeric fast path).

    ṁ = (A + Σ_h V_h) m + Σ_h V_h Σ B_h m + b
    Σ̇ = A Σ + Σ Aᵀ + Σ_h (V_h Σ B_h Σ + Σ B_hᵀ Σ V_hᵀ)

Both come from the field's linear part M = A + Σ_h V_h Σ B_h (`Params.M`): ṁ = M m + c and
Σ̇ = X + Xᵀ with X = MΣ, one symmetrisation for all terms: 2H + 2 matrix products for dense
heads, no loops over entries. Heads given as factors (`riccati_tf.state.params.Head`: B_h = K_hᵀQ_h,
V_h = O_h V_h') are stacked, and their part of M is O · blockdiag(V_h' Σ K_hᵀ) · Q: products
with d×Σ_h r_h operands, so a step costs O(d² Σ_h (r_h + s_h) + d³) instead of O(H d³).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..errors import SolverError
from .params import Gaussian, Params, check_dims

__all__ = ["moment_rhs"]

_Array = npt.NDArray[np.float64]


def drift_arrays(params: Params, mean: np.ndarray | None,
                 cov: np.ndarray) -> tuple[_Array, _Array | None]:
    """(X, ṁ) with X = M Σ, M = A + Σ_h V_h Σ B_h, so that Σ̇ = X + Xᵀ, and ṁ = M m + c; ṁ is
    None when mean is None (the mean terms are skipped)."""
    M = params.M(cov)
    return M @ cov, None if mean is None else M @ mean + params.c(mean)


def moment_arrays(params: Params, mean: np.ndarray, cov: np.ndarray) -> tuple[_Array, _Array]:
    """(ṁ, Σ̇) from raw arrays, without validation (used inside integrators):
    ṁ = M m + c, Σ̇ = MΣ + ΣMᵀ with M = A + Σ_h V_h Σ B_h, c = b + Σ_h V_h m."""
    X, dmean = drift_arrays(params, mean, cov)
    assert dmean is not None  # a mean was given
    return dmean, X + X.T


def covariance_array(params: Params, cov: np.ndarray) -> np.ndarray:
    """Σ̇ = X + Xᵀ alone, from a raw array (the mean terms skipped: for m ≡ 0 when b = 0)."""
    X, _ = drift_arrays(params, None, cov)
    return X + X.T


def moment_rhs(params: Params, gaussian: Gaussian) -> tuple[_Array, _Array]:
    """Right-hand side (ṁ, Σ̇) of the mean–covariance equations of SPEC §2 at N(m, Σ).

    The velocity of the Gaussian N(m, Σ) under the layer:

        ṁ = (A + V) m + V Σ B m + b,      Σ̇ = A Σ + Σ Aᵀ + V Σ B Σ + Σ Bᵀ Σ Vᵀ,

    with the attention terms added over heads for multi-head layers (V Σ B → Σ_h V_h Σ B_h).
    Both come from the field's linear part M = A + Σ_h V_h Σ B_h: ṁ = M m + c with
    c = b + Σ_h V_h m, and Σ̇ = MΣ + ΣMᵀ. Heads given as `Head` factors are never formed densely.

    Parameters
    ----------
    params : Params
        The layer (A, b and the heads).
    gaussian : Gaussian
        The state N(m, Σ), on the same R^d as the layer.

    Returns
    -------
    dmean : (d,) ndarray of float64
        ṁ, a new array.
    dcov : (d, d) ndarray of float64
        Σ̇, a new symmetric array.

    Raises
    ------
    InvalidInputError
        When `params` is not a `Params`, `gaussian` not a `Gaussian`, or their dimensions
        differ.
    SolverError
        When a value (or an intermediate product such as VΣBΣ) leaves the floating-point range:
        the returned arrays are always finite.

    See Also
    --------
    riccati_tf.flow : integrates these equations in time.
    riccati_tf.layers : their exact discrete-layer counterpart.
    riccati_tf.equilibria : the zeros of Σ̇.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".

    Examples
    --------
    For d = 1, σ̇ = 2aσ + 2vβσ² vanishes at σ = −a/(vβ) = 2:

    >>> import numpy as np
    >>> from riccati_tf import Gaussian, Params, moment_rhs
    >>> dm, dS = moment_rhs(Params(-1.0, B=1.0, V=0.5), Gaussian([1.0], [[2.0]]))
    >>> print(dm, dS)
    [0.5] [[0.]]

    The covariance equation term by term in d = 2:

    >>> rng = np.random.default_rng(1)
    >>> A, B, V = rng.standard_normal((3, 2, 2))
    >>> S = np.array([[2.0, 0.5], [0.5, 1.0]])
    >>> dm, dS = moment_rhs(Params(A, B, V), Gaussian(np.zeros(2), S))
    >>> bool(np.allclose(dS, A @ S + S @ A.T + V @ S @ B @ S + S @ B.T @ S @ V.T))
    True
    """
    check_dims(params, gaussian)
    with np.errstate(over="ignore", invalid="ignore"):
        dm, dS = moment_arrays(params, gaussian.mean, gaussian.cov)
    if not (np.all(np.isfinite(dm)) and np.all(np.isfinite(dS))):
        raise SolverError("the moment right-hand side (ṁ, Σ̇) overflows float64 for this layer "
                          "and Gaussian (its products AΣ, VΣBΣ, VΣBm exceed about 1e308)")
    return dm, dS
