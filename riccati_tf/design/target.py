"""A layer with a prescribed attracting Gaussian N(m*, Σ*) (SPEC §5, the Riccati case).

With scalar value matrices V_h = v_h I, v_h < 0, and G = −Σ_h v_h (B_h + B_hᵀ), the covariance
obeys Σ̇ = AΣ + ΣAᵀ − ΣGΣ. For Σ* ≻ 0 and G ≻ 0 the layers that make Σ* the attracting
equilibrium are

    A = ½ Σ* G + K Σ*⁻¹,   K = −Kᵀ,
    b = −K* m*,   K* = A + Σ_h v_h (I + Σ* B_h),

and for a target of rank k, Σ* = U S Uᵀ (U d×k orthonormal, Π = UUᵀ),

    A = ½ Σ* G Π + K Σ*⁺ − (κ/2)(I − Π),   K = −Kᵀ = ΠKΠ,   κ = λ_min(S UᵀGU).

`attracting_layer` builds one of them, choosing K by a least-squares criterion.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import InvalidInputError
from ..stability.certificates.certificate import Certificate
from ..stability.certificates.entry import certify
from ..state.params import Gaussian, Params
from ..state.validation import (
    PSD_RTOL,
    ReadOnlyArrays,
    as_array,
    as_count,
    as_covariance,
    as_matrix,
    as_real,
    as_vector,
    psd_rank,
    scale_exponent,
)

__all__ = ["CRITERIA", "GAINS", "MAX_HEADS", "Design", "attracting_layer"]

#: how the free skew-symmetric K is chosen
CRITERIA = ("min_norm", "closest")
#: the shape of G = −Σ_h v_h (B_h + B_hᵀ) built when B is not given
GAINS = ("precision", "identity")

_EPS = float(np.finfo(float).eps)
#: the most heads `attracting_layer` builds (each a d×d pair (v_h I, B_h))
MAX_HEADS = 1024


@dataclass(frozen=True, eq=False)
class Design(ReadOnlyArrays):
    """A layer whose Gaussian flow is attracted to N(m*, Σ*), with its parametrisation.

    The layer is

        A = ½ Σ* G Π + K Σ*⁺ − (κ/2)(I − Π),   b = −K* m*,   V_h = v_h I,

    (Π the projector onto range Σ*, Π = I and Σ*⁺ = Σ*⁻¹ for a full-rank target), so that
    AΣ* + Σ*Aᵀ = Σ*GΣ* and K* m* + b = 0 with K* = A + Σ_h v_h (I + Σ* B_h).

    Parameters
    ----------
    params : Params
        The layer (A, b, heads (v_h I, B_h)).
    target : Gaussian
        N(m*, Σ*) as designed for (the best rank-k approximation of the given covariance when a
        smaller `rank` was asked for).
    G : (d, d) ndarray
        −Σ_h v_h (B_h + B_hᵀ), symmetric, ≻ 0 (full rank) or ⪰ 0 with UᵀGU ≻ 0 (rank k).
    K : (d, d) ndarray
        The free skew-symmetric parameter (K = ΠKΠ).
    basis : (d, k) ndarray
        U: orthonormal eigenvectors of Σ* spanning its range (columns by increasing
        eigenvalue).
    criterion : str
        How K was chosen: "min_norm" or "closest".
    rate : float
        2 min |Re λ(A)|: the covariance's asymptotic decay rate (2 min Re λ(A) for a full-rank
        target).
    rate_bound : float
        tr(S UᵀGU)/k: no K gives a larger `rate` (tr(KΣ*⁺) = 0); reached when all Re λ on the
        target block are equal, e.g. for G ∝ Σ*⁺.
    mean_rate : float
        −max Re λ(K*), the mean's decay rate (= −Σ_h v_h for every K and B).
    residual_cov : float
        ‖AΣ* + Σ*Aᵀ − Σ*GΣ*‖_F / ‖Σ*GΣ*‖_F, from the layer's own A and G.
    residual_mean : float
        ‖K*m* + b‖ / (‖K*‖_F ‖m*‖) (0 for m* = 0), from the layer's own arrays.

    Raises
    ------
    InvalidInputError
        From `Design.admits` and `Design.certificate` for a start of the wrong size or not a
        covariance.

    See Also
    --------
    attracting_layer : builds a Design.
    riccati_tf.stability.certificates.entry.certify : the certificate of a start.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up" (scalar value matrices, P = Σ⁻¹ linear).

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.design import attracting_layer
    >>> des = attracting_layer(([1.0, -1.0], [[2.0, 0.5], [0.5, 1.0]]))
    >>> des.criterion, round(des.rate, 12), round(des.mean_rate, 12), des.residual_cov < 1e-14
    ('min_norm', 1.0, 1.0, True)
    """

    params: Params
    target: Gaussian
    G: np.ndarray
    K: np.ndarray
    basis: np.ndarray
    criterion: str
    rate: float
    rate_bound: float
    mean_rate: float
    residual_cov: float
    residual_mean: float

    @property
    def rank(self) -> int:
        """k = rank Σ*, the number of columns of `basis`."""
        return self.basis.shape[1]

    def admits(self, cov0: npt.ArrayLike) -> bool:
        """Whether the flow from Σ0 is proved to converge to Σ*.

        True for Σ0 ≻ 0 (SPEC §5, every target), and for rank Σ0 = k with UᵀΣ0U ≻ 0 (a
        rank-k target; see `attracting_layer`, Notes). Ranks are numerical (`psd_rank`).

        Parameters
        ----------
        cov0 : (d, d) array_like
            The start covariance Σ0 ⪰ 0.

        Returns
        -------
        bool
            Whether Σ0 is an admissible start.

        Raises
        ------
        InvalidInputError
            When cov0 is not a d×d covariance (see `as_covariance`).

        See Also
        --------
        Design.certificate : what `certify` says about a start.

        References
        ----------
        .. [1] riccati_tf theory, SPEC §3 "Rank invariance".

        Examples
        --------
        >>> from riccati_tf.design import attracting_layer
        >>> des = attracting_layer(([0.0, 0.0], [[1.0, 0.0], [0.0, 0.0]]))
        >>> des.admits([[1.0, 1.0], [1.0, 1.0]]), des.admits([[0.0, 0.0], [0.0, 1.0]])
        (True, False)
        """
        cov0 = as_covariance("cov0", cov0, self.params.d)
        r = psd_rank(cov0)
        if r == self.params.d:
            return True
        U = self.basis
        return r == self.rank and psd_rank(U.T @ cov0 @ U) == self.rank

    def certificate(self, start: Gaussian) -> Certificate:
        """certify(params, start): the certificate of the flow from a start N(m0, Σ0).

        Parameters
        ----------
        start : Gaussian
            The start N(m0, Σ0) on R^d.

        Returns
        -------
        Certificate
            `riccati_tf.stability.certificates.entry.certify` of the designed layer.

        Raises
        ------
        InvalidInputError
            When start is not a Gaussian on R^d.

        See Also
        --------
        Design.admits : the starts proved to converge.

        References
        ----------
        .. [1] riccati_tf theory, SPEC §6 "Certificates".

        Examples
        --------
        >>> import numpy as np
        >>> from riccati_tf.state.params import Gaussian
        >>> from riccati_tf.design import attracting_layer
        >>> des = attracting_layer(([1.0, 2.0], np.diag([1.0, 4.0])))
        >>> c = des.certificate(Gaussian([0.0, 0.0], np.eye(2)))
        >>> c.regime, bool(np.allclose(c.equilibrium.cov, np.diag([1.0, 4.0])))
        ('converges', True)
        """
        if not isinstance(start, Gaussian):
            raise InvalidInputError(f"start must be a riccati_tf Gaussian, got "
                                    f"{type(start).__name__}")
        return certify(self.params, start)


def attracting_layer(target: Gaussian | tuple[npt.ArrayLike, npt.ArrayLike], *,
                     v: float | Sequence[float] = -1.0, heads: int = 1,
                     B: npt.ArrayLike | None = None, A0: npt.ArrayLike | None = None,
                     criterion: str = "min_norm", gain: str = "precision", scale: float = 1.0,
                     rank: int | None = None) -> Design:
    """A layer (A, b, V_h = v_h I, B_h) whose Gaussian flow converges to N(m*, Σ*).

        A = ½ Σ* G Π + K Σ*⁺ − (κ/2)(I − Π),   K = −Kᵀ = ΠKΠ,
        b = −K* m*,   K* = A + Σ_h v_h (I + Σ* B_h),   G = −Σ_h v_h (B_h + B_hᵀ)

    (Π = UUᵀ the projector onto range Σ* = U S Uᵀ, κ = λ_min(S UᵀGU); Π = I for Σ* ≻ 0). Then
    Σ* solves the Bernoulli equation AΣ* + Σ*Aᵀ = Σ*GΣ*, Σ*⁺ solves the Lyapunov equation on
    the target block, and every admissible start converges to (m*, Σ*) (Notes).

    Parameters
    ----------
    target : Gaussian or (mean, cov)
        N(m*, Σ*); Σ* ⪰ 0 of numerical rank k ≥ 1 (`psd_rank`).
    v : float or sequence of float, optional
        The value scalars v_h < 0, one for all heads or one per head (default −1).
    heads : int, optional
        The number of heads, 1 ≤ H ≤ MAX_HEADS (default 1).
    B : (d, d) or (H, d, d) array_like, optional
        The query–key matrices B_h (a single matrix for H = 1). Their G must be ≻ 0 (full-rank
        target), or ⪰ 0 with UᵀGU ≻ 0 (rank-k target). Default: B_h = −G/(2 H v_h), symmetric,
        with G chosen by `gain`.
    A0 : (d, d) array_like, optional
        The matrix A should be closest to; required by, and only used for, "closest".
    criterion : {"min_norm", "closest"}, optional
        "min_norm" (default): K minimises ‖A‖_F; "closest": K minimises ‖A − A0‖_F.
    gain : {"precision", "identity"}, optional
        G when B is not given: "precision" (default) G = c (Σ*⁺ + (I − Π)/λ_max(Σ*)),
        "identity" G = c I.
    scale : float, optional
        c > 0 (default 1). With gain "precision" the covariance rate is exactly c.
    rank : int, optional
        Design for the best rank-`rank` approximation of Σ* (its top eigenpairs); default the
        numerical rank. At most the numerical rank.

    Returns
    -------
    Design
        The layer, its parametrisation (G, K, U), rates and residuals.

    Raises
    ------
    InvalidInputError
        target neither a Gaussian nor a (mean, cov) pair; cov not square, NaN/Inf, not
        symmetric or not positive semidefinite, or 0; mean not of length d; v not < 0 or of the
        wrong length; heads not an integer in [1, MAX_HEADS]; B of the wrong shape or with G
        not as required; A0 not d×d, missing for "closest" or given for another criterion;
        unknown criterion or gain; scale not > 0; rank not in [1, numerical rank].

    See Also
    --------
    Design : the result.
    riccati_tf.stability.certificates.entry.certify : certifies the designed layer.
    riccati_tf.flows.integrate.flow : its trajectories.

    Notes
    -----
    Full rank. P = Σ⁻¹ obeys Ṗ = −AᵀP − PA + G (SPEC §5) and Σ*⁻¹ A + AᵀΣ*⁻¹ = G ≻ 0, so A
    is anti-stable and P(t) − Σ*⁻¹ = e^{−Aᵀt}(P0 − Σ*⁻¹)e^{−At} → 0 from every Σ0 ≻ 0 at
    rate 2 min Re λ(A). Since tr(KΣ*⁻¹) = 0, min Re λ(A) ≤ tr(Σ*G)/(2d) for every K
    (`rate_bound`); for G = cΣ*⁻¹, A = (c/2) I + KΣ*⁻¹ has its whole spectrum on Re λ = c/2
    (KΣ*⁻¹ is similar to the skew Σ*^{−½}KΣ*^{−½}), so the rate is c for every K: the bound is
    met and no K is faster, which is why no "fastest" criterion is offered.

    The mean: writing N = Σ_h v_h (B_h − B_hᵀ)/2, K* = KΣ*⁺ + Σ*N + (Σ_h v_h) I on the target
    block (a skew matrix up to similarity plus a shift), block triangular against the complement
    block −κ/2 + Σ_h v_h: K* is Hurwitz with spectral abscissa Σ_h v_h for every K and B, and
    m(t) → m* = −K*⁻¹ b.

    Rank k < d. In the basis (U, W), W spanning ker Σ*, A = diag(A_k, −(κ/2) I) with
    A_k = ½SG_k + K_kS⁻¹ the full-rank design in k coordinates (G_k = UᵀGU ≻ 0,
    K = U K_k Uᵀ); range U is invariant. Admissible starts (`Design.admits`): every Σ0 ≻ 0 (G ⪰ 0
    and A has exactly k eigenvalues with Re λ > 0, spanning range U and seen by G, so SPEC §5
    gives convergence to the stabilizing solution U S Uᵀ); and every Σ0 of rank k with
    UᵀΣ0U ≻ 0: range Σ(t) = e^{At} range Σ0 is the graph {Ux + WZ(t)x} of
    Z(t) = e^{−κt/2} Z0 e^{−A_k t} → 0, and P = (UᵀΣU)⁻¹ obeys the linear
    Ṗ = −A_kᵀP − PA_k + [I Zᵀ]G[I; Z], whose forcing tends to G_k, so P → S⁻¹. A start of rank
    k with UᵀΣ0U singular converges elsewhere (the rank of UᵀΣU is invariant too). The default
    G puts λ_min(G_k) on ker Σ* so that G ≻ 0 (a G ⪰ 0 that is singular only by rounding is
    not decided PSD, and `certify` could not use the theorem).

    K is the least-squares fit in closed form: ‖A − T‖_F² = ‖A_k − UᵀTU‖_F² + (terms free of
    K) for T = 0 and T = A0, and in the eigenbasis of S the k(k−1)/2 entries of K_k decouple
    (`_skew_fit`).

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] riccati_tf theory, SPEC §3 "Rank invariance".

    Examples
    --------
    Two heads, a full-rank target: Σ* is the equilibrium, and the rate is `scale`:

    >>> import numpy as np
    >>> from riccati_tf.design import attracting_layer
    >>> cov = np.array([[2.0, 0.5], [0.5, 1.0]])
    >>> des = attracting_layer(([1.0, -1.0], cov), heads=2, scale=3.0)
    >>> A, G = des.params.A, des.G
    >>> bool(np.allclose(A @ cov + cov @ A.T, cov @ G @ cov)), round(des.rate, 12)
    (True, 3.0)

    A rank-one target in R^2 keeps its line invariant; the complement decays:

    >>> des = attracting_layer(([0.0, 1.0], [[1.0, 1.0], [1.0, 1.0]]))
    >>> des.rank, np.round(np.linalg.eigvals(des.params.A).real, 6).tolist()
    (1, [0.5, -0.5])
    """
    mean, cov = _target(target)
    d = cov.shape[0]
    U, s, cov = _spectral(cov, rank)
    k = s.size
    H = as_count("heads", heads, maximum=MAX_HEADS, limit="design.target.MAX_HEADS")
    vs = _scalars(v, H)
    if criterion not in CRITERIA:
        raise InvalidInputError(f"criterion must be one of {CRITERIA}, got {criterion!r}")
    if gain not in GAINS:
        raise InvalidInputError(f"gain must be one of {GAINS}, got {gain!r}")
    c = as_real("scale", scale)
    if not c > 0:
        raise InvalidInputError(f"scale must be > 0, got {c}")
    if (A0 is None) == (criterion == "closest"):
        raise InvalidInputError("A0 is required by criterion 'closest' and used by no other "
                                f"criterion (criterion {criterion!r}, A0 "
                                f"{'missing' if A0 is None else 'given'})")
    comp = np.eye(d) - U @ U.T if k < d else np.zeros((d, d))  # I − Π, the projector on ker Σ*
    if B is None:
        with np.errstate(over="ignore", invalid="ignore"):  # refused below
            G = c * np.eye(d) if gain == "identity" else c * ((U / s) @ U.T + comp / s[-1])
        if not np.all(np.isfinite(G)):
            raise InvalidInputError(f"the gain G = scale · Σ*⁺ overflows float64 (scale = {c:.3g}, "
                                    f"smallest eigenvalue of target cov {s[0]:.3g}): lower scale "
                                    f"or rescale the target")
        Bs = [-G / (2 * H * vh) for vh in vs]
    else:
        Bs = _query_keys(B, H, d)
        G = -sum((vh * (Bh + Bh.T) for vh, Bh in zip(vs, Bs, strict=True)), np.zeros((d, d)))
    Gk = U.T @ G @ U
    _check_gain(G, Gk, k == d)
    root = np.sqrt(s)
    kappa = float(np.linalg.eigvalsh(root[:, None] * Gk * root[None, :])[0])
    base = 0.5 * s[:, None] * Gk  # ½ S G_k
    T = np.zeros((k, k)) if A0 is None else U.T @ as_matrix("A0", A0, d) @ U
    Kk = _skew_fit(base - T, s)
    A = U @ (base + Kk / s[None, :]) @ U.T - 0.5 * kappa * comp
    vbar = float(sum(vs))
    with np.errstate(over="ignore", invalid="ignore"):  # refused below
        Kstar = A + vbar * np.eye(d) + cov @ sum((vh * Bh for vh, Bh in zip(vs, Bs, strict=True)),
                                                  np.zeros((d, d)))
        b = -Kstar @ mean
    if not all(np.all(np.isfinite(x)) for x in (A, b, *Bs)):
        raise InvalidInputError(f"target: the layer for this target overflows float64 (‖Σ*‖₂ = "
                                f"{s[-1]:.3g}, λ_min on its range {s[0]:.3g}, max |m*_i| = "
                                f"{np.max(np.abs(mean)):.3g}, v = {vs}, scale = {c:.3g}): "
                                f"rescale the target, v or the scale")
    params = (Params(A, b=b, B=Bs[0], V=vs[0] * np.eye(d)) if H == 1 else
              Params(A, b=b, heads=[(vh * np.eye(d), Bh) for vh, Bh in zip(vs, Bs, strict=True)]))
    return _finish(params, Gaussian(mean, cov), U, U @ Kk @ U.T, criterion,
                   rate_bound=float(np.trace(base)) * 2 / k)


def _target(target: Any) -> tuple[np.ndarray, np.ndarray]:
    """(m*, Σ*) validated, from a Gaussian or a (mean, cov) pair."""
    if isinstance(target, Gaussian):
        return np.array(target.mean), np.array(target.cov)
    if not isinstance(target, tuple | list) or len(target) != 2:
        raise InvalidInputError(f"target must be a riccati_tf Gaussian or a (mean, cov) pair, "
                                f"got {type(target).__name__}")
    cov = as_covariance("target cov", target[1])
    return as_vector("target mean", target[0], cov.shape[0]), cov


def _spectral(cov: np.ndarray, rank: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(U, s, Σ*): the top-k eigenpairs of Σ* (s increasing) and the covariance designed for
    (Σ* itself at its numerical rank, else U diag(s) Uᵀ)."""
    r = psd_rank(cov)
    if r == 0:
        raise InvalidInputError("target cov is 0: an attracting Gaussian needs rank ≥ 1")
    k = r if rank is None else as_count("rank", rank, maximum=r,
                                        limit="the numerical rank of target cov")
    eig, vec = np.linalg.eigh(cov)
    U, s = vec[:, -k:], eig[-k:]
    tiny = np.finfo(float).tiny
    if s[0] < tiny:
        raise InvalidInputError(
            f"target cov has eigenvalue {s[0]:.3g} among the {k} the layer is designed on, below "
            f"the smallest normal float64 {tiny:.3g}: its scale underflows (subnormals carry "
            f"fewer than 53 significant bits) and the precision Σ*⁺ the layer is built from "
            f"overflows; rescale the target" + ("" if k == 1 else ", or design on its larger "
                                                 "eigenvalues (rank=)"))
    return U, s, cov if k == r else (U * s) @ U.T


def _scalars(v: Any, H: int) -> list[float]:
    """v_h < 0 for each of the H heads."""
    arr = as_array("v", v)
    if arr.ndim > 1 or (arr.ndim == 1 and arr.size != H):
        raise InvalidInputError(f"v must be one number or one per head (heads = {H}), got "
                                f"shape {arr.shape}")
    vs = [float(x) for x in np.broadcast_to(arr, (H,))]
    if max(vs) >= 0:
        raise InvalidInputError(f"v must be < 0 (V_h = v_h I with v_h < 0 makes G ≻ 0 possible "
                                f"with B_h ≻ 0), got {max(vs)}")
    return vs


def _query_keys(B: Any, H: int, d: int) -> list[np.ndarray]:
    """The H matrices B_h, each d×d."""
    arr = as_array("B", B)
    if arr.ndim == 2:
        arr = arr[None]
    if arr.shape != (H, d, d):
        raise InvalidInputError(f"B must be {d}×{d} (one head) or {H}×{d}×{d} (one per head, "
                                f"heads = {H}), got shape {arr.shape}")
    return list(arr)


def _check_gain(G: np.ndarray, Gk: np.ndarray, full: bool) -> None:
    """G ≻ 0 for a full-rank target, else G ⪰ 0 and G_k = UᵀGU ≻ 0 (numerically)."""
    eig = np.linalg.eigvalsh(G)
    top = max(float(eig[-1]), 0.0)
    if full and not eig[0] > G.shape[0] * _EPS * top:
        raise InvalidInputError(f"B gives G = −Σ_h v_h (B_h + B_hᵀ) with smallest eigenvalue "
                                f"{eig[0]:.6g} (largest {eig[-1]:.6g}): G must be ≻ 0")
    if not full:
        low = float(np.linalg.eigvalsh(Gk)[0])
        if eig[0] < -PSD_RTOL * top or not low > G.shape[0] * _EPS * top:
            raise InvalidInputError(f"B gives G = −Σ_h v_h (B_h + B_hᵀ) with smallest eigenvalue "
                                    f"{eig[0]:.6g} and UᵀGU (on range Σ*) with smallest "
                                    f"{low:.6g}: G must be ⪰ 0 and ≻ 0 on range Σ*")


def _skew_fit(R: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The skew K_k minimising ‖R + K_k S⁻¹‖_F (S = diag(s)): the pairs (i, j) decouple,
    (R_ij + K_ij/s_j)² + (R_ji − K_ij/s_i)² is least at

        K_ij = (R_ji/s_i − R_ij/s_j) / (1/s_i² + 1/s_j²)
             = σ t_i t_j (R_ji t_j − R_ij t_i) / (t_i² + t_j²),   s = σ t,  σ = max s

    (no overflow of 1/s² for a tiny target)."""
    sigma = float(s.max())
    ti, tj = s[:, None] / sigma, s[None, :] / sigma
    return sigma * ti * tj * (R.T * tj - R * ti) / (ti ** 2 + tj ** 2)


def _finish(params: Params, target: Gaussian, U: np.ndarray, K: np.ndarray, criterion: str,
            rate_bound: float) -> Design:
    """The Design with rates and residuals computed from the layer's own arrays."""
    d = params.d
    A, G, cov, m = params.A, params.G, target.cov, target.mean
    vs = params.value_scalars or ()
    Kstar = A + sum(vh * (np.eye(d) + cov @ Bh) for vh, (_, Bh) in
                    zip(vs, params.heads, strict=True))
    # in Σ* / 2^e and 2^e G (the same ratio, homogeneous of degree 1 in 2^e): no underflow of
    # Σ*GΣ* for a tiny target, no overflow for a huge one
    e = scale_exponent(cov)
    cov_s, G_s = np.ldexp(cov, -e), np.ldexp(G, e)
    quad = cov_s @ G_s @ cov_s
    res_cov = float(np.linalg.norm(A @ cov_s + cov_s @ A.T - quad) / np.linalg.norm(quad))
    top = float(np.max(np.abs(m), initial=0.0))  # m* and b in units of max |m*_i|
    res_mean = float(np.linalg.norm(Kstar @ (m / top) + params.b / top)
                     / (np.linalg.norm(Kstar) * np.linalg.norm(m / top))) if top else 0.0
    for arr in (K, U):
        arr.setflags(write=False)
    return Design(params=params, target=target, G=G, K=K, basis=U,
                  criterion=criterion,
                  rate=2 * float(np.min(np.abs(np.linalg.eigvals(A).real))),
                  rate_bound=rate_bound,
                  mean_rate=-float(np.max(np.linalg.eigvals(Kstar).real)),
                  residual_cov=res_cov, residual_mean=res_mean)
