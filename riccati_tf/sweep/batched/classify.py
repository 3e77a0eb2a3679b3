"""The batched classifier: certify's verdict (SPEC §5–§6) for each layer of a stack, from premises
decided with margins (`margins`), or none, the case then going to `certify`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from numpy.linalg import LinAlgError

from ...errors import InvalidInputError, SolverError
from ...stability.certificates import (
    BLOWUP_CHECK_RTOL,
    EXACT_CHECK_MAX_D,
    EXACT_MAX_D,
    MAX_GRAMIAN_STEPS,
    MAX_NORM_TIME,
    THEOREMS,
    Premises,
    blowup_check,
    bracket_agrees,
    cov_root,
    default_tolerance,
    premises,
    theorem_of,
)
from ...stability.equilibria import ACCEPT_RTOL, KRONECKER_MAX_D
from ...stability.equilibria.evidence import is_psd
from ...stability.riccati import bernoulli
from ...stability.riccati.numerics import exponent, numerical_failures
from ...state.params import Params
from ...state.validation import as_covariance
from .blowup import _blowup_times, _EigenGramian, _eigh_finite
from .constants import (
    _EPS,
    _TINY,
    BLOWUP_NORM_TIME,
    CHECK_MARGIN,
    EIGVEC_COND_MAX,
    G_ROUND_ULPS,
    HORIZON_RTOL,
    LYAP_CERT_RTOL,
    RANGE_MARGIN,
    ROUNDING_ULPS,
    THRESHOLD_SLACK,
    UNSEEN_MARGIN,
)
from .heads import g_rounding, quadratic_constants
from .margins import _eigen_discs, _fast_premises, _threshold_bound
from .stack import _Discs, van_loan_stack

__all__: list[str] = []  # BatchedCertificates, classify_scalar: riccati_tf.sweep.batched


@dataclass(frozen=True, eq=False)
class BatchedCertificates:
    """certify's verdicts for a stack of n scalar-V layers, field by field (NaN for None).

    The fields of `riccati_tf.Certificate` that a sweep records, for n layers of
    Σ̇ = AΣ + ΣAᵀ − ΣGΣ at once, as returned by `classify_scalar`.

    Parameters
    ----------
    regime : (n,) ndarray of str (object)
        "converges", "collapses", "blows_up", "grows" or "undetermined" ("bounded" is left to
        `certify`); "" where not handled.
    theorem : (n,) ndarray of str (object)
        The SPEC §5 theorem the verdict rests on (certificates.THEOREMS); "" where not handled.
    exact : (n,) ndarray of bool
        Whether the premises were decided exactly (as certify decides them in rational
        arithmetic).
    global_ : (n,) ndarray of bool
        Whether the verdict holds for every Σ0 ≻ 0, not only this Σ0.
    rate : (n,) ndarray of float
        The exponential rate of convergence or collapse; NaN for None.
    blowup_time : (n,) ndarray of float
        T* of a blow-up; NaN for None.
    threshold : (n,) ndarray of float
        λ_max(W∞Σ0) for Hurwitz A and G ≺ 0 (blow-up iff > 1); NaN for None.
    handled : (n,) ndarray of bool
        False where the batched path cannot show that its verdict is certify's (premises within
        the rounding margins, numerical evidence, a T* it cannot confirm): such a case must go
        to `certify` itself.
    g_eigenvalues : (n, d) ndarray of float
        The eigenvalues of G, increasing (NaN for a non-finite case).
    a_eigenvalues : (n, d) ndarray of complex
        The eigenvalues of A (NaN for a non-finite case).
    rank0 : (n,) ndarray of int
        The rank of Σ0; −1 where not decided.

    Raises
    ------
    TypeError
        When a field is missing (the dataclass constructor; the fields are not checked).

    See Also
    --------
    classify_scalar : computes these verdicts.
    riccati_tf.Certificate : the per-case certificate whose fields these are.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up", and §6 "Certificates".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.sweep.batched import classify_scalar
    >>> res = classify_scalar(-np.eye(2)[None], 2 * np.eye(2)[None], np.eye(2)[None])
    >>> len(res), res.regime[0], res.theorem[0], bool(res.handled[0]), float(res.rate[0])
    (1, 'collapses', 'psd_hurwitz', True, 2.0)
    """

    regime: np.ndarray
    theorem: np.ndarray
    exact: np.ndarray
    global_: np.ndarray
    rate: np.ndarray
    blowup_time: np.ndarray
    threshold: np.ndarray
    handled: np.ndarray
    g_eigenvalues: np.ndarray
    a_eigenvalues: np.ndarray
    rank0: np.ndarray

    def __len__(self) -> int:
        return self.regime.size


def classify_scalar(A: npt.NDArray[np.float64], G: npt.NDArray[np.float64],
                    cov0: npt.NDArray[np.float64], quadratic: npt.ArrayLike | None = None, *,
                    heads: tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]] | None = None
                    ) -> BatchedCertificates:
    """certify's verdict for a stack of n scalar-V layers at once (handled) or none.

    For layers whose value matrices are exactly V_h = v_h I the covariance obeys the Riccati
    equation Σ̇ = AΣ + ΣAᵀ − ΣGΣ, G = −Σ_h v_h(B_h + B_hᵀ), with the closed form
    Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt}, W(t) = ∫_0^t e^{Aᵀu} G e^{Au} du. The SPEC §5
    theorems that `certify` applies are decided here on the whole stack: the definiteness of G
    and of Σ0, the half-plane counts of λ(A) and, for G ≺ 0 with A Hurwitz, the sign of
    λ_max(W∞Σ0) − 1, each in floating point only where a margin far larger than every rounding
    error shows that the exact decision is the same (module docstring); blow-up times by
    `blowup_times`, confirmed by certify's own check. A case the margins do not settle is
    marked handled False and belongs to `certify`.

    Parameters
    ----------
    A : (n, d, d) ndarray of float
        The drift matrices.
    G : (n, d, d) ndarray of float, symmetric
        G = −Σ_h v_h(B_h + B_hᵀ) per case, as `g_matrix` computes it.
    cov0 : (n, d, d) ndarray of float, symmetric positive semidefinite
        The initial covariances Σ0.
    quadratic : (n,) array_like of float, optional
        c = 2 Σ_h ‖V_h‖₂‖B_h‖₂ per case (equilibrium.quadratic_constant), which sets certify's
        blow-up horizon MAX_NORM_TIME / max(‖A‖₂, c‖Σ0‖₂) and, without `heads`, the size of G's
        rounding; None counts as c = 0 (or is computed from `heads`).
    heads : tuple (V, B) of tuples of (n, d, d) ndarray, optional
        The stacks of value and key-query matrices per head: G's rounding is then bounded
        exactly (`g_rounding`) and the cases the floating-point margins cannot settle get
        certify's own premises case by case; without it they are left to `certify`.

    Returns
    -------
    BatchedCertificates
        The verdict fields per case; handled False where the case must go to `certify`.

    Raises
    ------
    ValueError
        When the stacks do not have matching shapes (n, d, d).
    numpy.linalg.LinAlgError
        When a stacked eigensolver fails on finite input (non-finite cases are left unhandled,
        not raised).

    See Also
    --------
    riccati_tf.certify : the per-case certificate whose verdict this reproduces.
    riccati_tf.sweep.runner.certify_columns : a sweep chunk's certificates, batched first.
    blowup_times : the T* search on a stack.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up", and §6 "Certificates".
    .. [2] F. L. Bauer and C. T. Fike, "Norms and exclusion theorems", Numer. Math. 2, 1960
       (the discs that decide the half-plane counts of λ(A)).

    Examples
    --------
    Three layers of `riccati_tf.app.examples.regime_examples`, V = vI:

    >>> import numpy as np
    >>> from riccati_tf.sweep.batched import classify_scalar
    >>> rot = np.array([[0.0, -1.0], [1.0, 0.0]])
    >>> B = np.array([[1.0, 0.2], [0.2, 0.6]])
    >>> A = np.stack([0.5 * np.eye(2) + 0.3 * rot, -0.4 * np.eye(2) + 0.5 * rot,
    ...               0.2 * np.eye(2) + 0.3 * rot])
    >>> v = np.array([-1.0, -1.0, 0.3])
    >>> G = -v[:, None, None] * (B + B.T)
    >>> cov0 = np.broadcast_to([[1.0, 0.3], [0.3, 0.5]], (3, 2, 2))
    >>> res = classify_scalar(A, G, cov0)
    >>> res.regime.tolist(), res.handled.tolist()
    (['converges', 'collapses', 'blows_up'], [True, True, True])
    >>> print(round(float(res.blowup_time[2]), 6))
    1.101518

    The same as `certify`, one layer at a time:

    >>> from riccati_tf import Params, certify
    >>> cert = certify(Params(A=A[2], B=B, V=0.3 * np.eye(2)), cov0[2])
    >>> cert.regime, bool(np.isclose(cert.blowup_time, res.blowup_time[2], rtol=1e-12))
    ('blows_up', True)
    """
    with np.errstate(all="ignore"):  # non-finite intermediates are tested for, not warned of
        return _classify(A, G, cov0, quadratic, heads)


def _classify(A: np.ndarray, G: np.ndarray, cov0: np.ndarray, quadratic: npt.ArrayLike | None,
              heads: tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]] | None
              ) -> BatchedCertificates:
    n = A.shape[0]
    if heads is not None and quadratic is None:
        quadratic = quadratic_constants(*heads)
    c = None if quadratic is None else np.asarray(quadratic, dtype=float)
    g_err = g_rounding(*heads) if heads is not None else _default_g_error(G, quadratic)
    table = _Table(n)
    zero = ~np.any(cov0, axis=(1, 2))
    table.set(np.flatnonzero(zero), "collapses", "zero", True, False)
    fast = _fast_premises(A, G, cov0, g_err)
    prem, covs = fast.premises, cov0
    d = A.shape[-1]
    zero_ok = np.zeros(n, dtype=bool)
    if heads is not None:
        covs = cov0.copy()
        fin = np.flatnonzero(np.isfinite(fast.g_eigenvalues).all(axis=1) & ~zero)
        if d > EXACT_MAX_D and fin.size:
            discs = fast.discs[fin]
            if EXACT_CHECK_MAX_D < d <= KRONECKER_MAX_D:
                zero_ok[fin] = _lyapunov_certified(A[fin], discs,
                                                   np.linalg.norm(A[fin], 2, axis=(1, 2)))
            first = [(Vh[fin[0]], Bh[fin[0]]) for Vh, Bh in zip(*heads, strict=True)]
            tol = default_tolerance(Params(A=A[fin[0]], heads=first))
            stacked = _numerical_stack(A[fin], G[fin], cov0[fin], g_err[fin],
                                       fast.g_eigenvalues[fin], discs, tol)
            for i, pr in zip(fin, stacked, strict=True):
                prem[i] = pr
        for i in np.flatnonzero(~zero):
            if prem[i] is None:
                prem[i], covs[i] = _case_premises(A[i], heads, i, cov0[i])
    blow: list[int] = []
    for i in np.flatnonzero(~zero):
        if prem[i] is not None:
            _settle(table, i, prem[i], A[i], G[i], covs[i], fast.a_eigenvalues[i],
                    fast.g_eigenvalues[i], blow, bool(zero_ok[i]),
                    0.0 if c is None else float(c[i]))
    if blow:
        _blowups(table, np.array(blow), A, G, covs, prem, quadratic, fast.discs[blow])
    return BatchedCertificates(table.regime, table.theorem, table.exact, table.global_,
                               table.rate, table.blowup_time, table.threshold, table.handled,
                               fast.g_eigenvalues, fast.a_eigenvalues,
                               np.array([-1 if pr is None else pr.rank0 for pr in prem], int))


class _Table:
    """The verdict columns under construction."""

    def __init__(self, n: int) -> None:
        self.regime = np.full(n, "", dtype=object)
        self.theorem = np.full(n, "", dtype=object)
        self.exact, self.global_, self.handled = (np.zeros(n, dtype=bool) for _ in range(3))
        self.rate, self.blowup_time, self.threshold = (np.full(n, np.nan) for _ in range(3))

    def set(self, idx: int | np.integer | np.ndarray, regime: str, theorem: str, exact: bool,
            glob: bool, *, rate: float | None = None, threshold: float | None = None) -> None:
        self.regime[idx], self.theorem[idx], self.handled[idx] = regime, theorem, True
        self.exact[idx], self.global_[idx] = exact, glob
        self.rate[idx] = np.nan if rate is None else rate
        self.threshold[idx] = np.nan if threshold is None else threshold

    def drop(self, idx: int | np.integer | np.ndarray) -> None:
        """Hand the cases back to `certify`."""
        self.regime[idx], self.theorem[idx], self.handled[idx] = "", "", False
        self.exact[idx] = self.global_[idx] = False
        self.rate[idx] = self.blowup_time[idx] = self.threshold[idx] = np.nan


def _settle(table: _Table, i: int | np.integer, pr: Premises, A: np.ndarray, G: np.ndarray,
            cov0: np.ndarray, eig: np.ndarray, g_eig: np.ndarray, blow: list[int],
            zero_ok: bool = False, c: float = 0.0) -> None:
    """certify's branch for premises `pr` (certificates.theorem_of and `_certify`) on layer i
    (A, G, start Σ0 = cov0; eigenvalues eig of A, g_eig of G), except that a blow-up waits for
    its T* (`_blowups`), a convergence needs the stabilizing solution certify will find
    (`stabilizing_found`), and anything integrated is left to certify.

    Numerical premises (d > EXACT_MAX_D: decided with certify's tolerances, exact False) settle
    only the verdicts whose certificate `check()` re-decides from the premises alone: certify
    attaches a local Lyapunov certificate to a numerical "collapses" at Σ* = 0 when
    d ≤ KRONECKER_MAX_D (its failure would make the verdict "undetermined"), so such cases go to
    certify unless zero_ok (`_lyapunov_certified`: that certificate passes its re-check), as do
    numerical "psd_gramian_pd" verdicts unless the same holds at Σ* (c: the case's quadratic
    constant); a numerical blow-up is kept only where G is negative definite beyond eigvalsh's
    rounding (`_provably_nd`), so that T* is the first root of a monotone function, as for an
    exact premise. A numerical "grows" or "converges" that G ∓ δI do not share
    (`certificates.bracket_agrees`) is left to certify, which then decides by the closed form."""
    d = A.shape[-1]
    got = theorem_of(pr, d)
    if got is None:
        if pr.g_nsd and pr.range_stable and pr.threshold_sign == 0:
            table.set(i, "undetermined", "numerical", False, False, threshold=pr.threshold)
        return
    theorem, regime = got
    if not bracket_agrees(Params(A, B=-0.5 * G, V=np.eye(d)), cov0, pr):
        return
    glob = THEOREMS[theorem][1] and pr.exact
    local = not pr.exact and d <= KRONECKER_MAX_D  # certify's local Lyapunov evidence decides
    re = eig.real
    if theorem == "psd_hurwitz":
        if not local or zero_ok:
            table.set(i, regime, theorem, pr.exact, glob, rate=-2 * float(np.max(re)))
    elif theorem == "psd_gramian_singular":
        table.set(i, regime, theorem, pr.exact, glob)
    elif theorem == "psd_gramian_pd":
        if stabilizing_found(A, G, pr.n_right, local_c=c if local else None):
            table.set(i, regime, theorem, pr.exact, glob, rate=2 * float(np.min(np.abs(re))))
    elif regime == "blows_up":
        if pr.exact or _provably_nd(g_eig):
            table.set(i, regime, theorem, pr.exact, glob, threshold=pr.threshold)
            blow.append(int(i))
    elif pr.threshold is not None and np.any(re < 0) and not (local and pr.n_left == d
                                                              and not zero_ok):
        table.set(i, regime, theorem, pr.exact, glob, threshold=pr.threshold,
                  rate=-2 * float(np.max(re[re < 0])))


def _provably_nd(g_eig: np.ndarray) -> bool:
    """G ≺ 0 with its largest computed eigenvalue below −ROUNDING_ULPS d eps ‖G‖₂."""
    d = g_eig.size
    return bool(g_eig[-1] < -ROUNDING_ULPS * d * _EPS * np.abs(g_eig).max())


def _lyapunov_certified(M: np.ndarray, discs: _Discs, norm: np.ndarray) -> np.ndarray:
    """Whether certify's local Lyapunov certificate for the linearisation L(H) = MH + HMᵀ on
    Sym(d) passes its re-check, per case (EXACT_CHECK_MAX_D < d ≤ KRONECKER_MAX_D, so that no
    rational re-check runs): M = A at Σ* = 0, M = A − Σ*G at a Bernoulli solution Σ*, where
    certify's Kronecker form of L is this operator up to rounding; norm ≥ ‖M‖₂ bounds the
    entries that form L (‖A‖₂, or ‖A‖₂ + c‖Σ*‖₂ with c ≥ ‖G‖₂).

    L has n_s = d(d + 1)/2 coordinates, ‖L‖ ≤ 2 norm and ‖e^{Lt}‖ ≤ ‖e^{Mt}‖₂², and certify
    solves LᵀP + PL = −I (Bartels–Stewart). With M = VΛV⁻¹ + E (LAPACK's eigenpairs, the
    Bauer–Fike radius r ≥ κ₂(V)‖E‖₂ of `_eigen_discs`: discs), ‖e^{Mt}‖₂ ≤ κ e^{αt},
    α = max Re λ + r, so for α < 0 ‖P‖₂ ≤ ∫‖e^{Mt}‖₂⁴dt ≤ κ⁴/(4|α|) and λ_min(P) ≥ 1/(2‖L‖):
    κ₂(P) ≤ norm κ⁴/|α|. When that times ROUNDING_ULPS n_s eps is at most LYAP_CERT_RTOL, L's
    computed spectrum is in the left half-plane (its backward error and the rounding of L are far
    inside the stability radius 1/(2‖P‖)), and the computed P and −(LᵀP + PL) (the identity up
    to a residual of relative size n_s eps κ₂(P)) are positive definite far beyond Cholesky's
    rounding, so the check's Cholesky factorisations succeed. The rest of the check
    (`certificates._local_bounds`: the Kantorovich ball and the basin level) recomputes what
    certify computed to build the certificate, from the same data: a certificate built passes
    it, and one that certify cannot build is not attached, which leaves the verdict unchanged."""
    d = M.shape[-1]
    lam, cond, radius = discs.lam, discs.cond, discs.radius
    alpha = lam.real.max(axis=1) + radius
    rounding = ROUNDING_ULPS * (d * (d + 1) // 2) * _EPS * norm
    with np.errstate(over="ignore", invalid="ignore"):
        return (cond <= EIGVEC_COND_MAX) & (alpha < 0) & \
            (rounding * cond ** 4 <= -LYAP_CERT_RTOL * alpha)


def _numerical_stack(A: np.ndarray, G: np.ndarray, cov0: np.ndarray, g_err: np.ndarray,
                     g: np.ndarray, discs: _Discs, tol: dict) -> list[Premises | None]:
    """certify's numerical premises (`certificates._numerical_premises` with the tolerances tol)
    for layers beyond EXACT_MAX_D, wherever margins show that certify decides them the same way;
    None elsewhere (`_case_premises` then computes them). g: the eigenvalues of G; discs: A's
    (`_eigen_discs`).

    G's signs against sign_rtol max|λ(G)| are kept when no extreme eigenvalue lies within half
    that tolerance of it; Σ0 exactly symmetric with λ_min(Σ0) > 2 rank_rtol λ_max has rank d; the
    half-plane counts of A are kept when every Bauer–Fike disc, widened by the rounding
    ROUNDING_ULPS d eps κ₂(V)‖A‖_F of certify's eigensolvers, lies beyond axis_rtol‖A‖_F of iℝ
    (n_axis = 0). Then:

    - G ⪰ 0 with n_right > 0: certify's unseen is False when G ≻ 0 and a lower bound of its
      reciprocal condition number of the anti-stable Gramian P (T₁₁ᵀP + PT₁₁ = U₁ᵀGU₁,
      `riccati.schur_split`), g_min / (2√k‖A‖₂ max(√k p, d‖G‖₂/(2‖A‖₂))) with k = n_right,
      λ_min(P) ≥ g_min/(2‖A‖₂) and ‖P‖₂ ≤ p = ‖G‖₂κ²/(2α₊) (α₊: the least Re λ − r over the
      anti-stable discs), is at least UNSEEN_MARGIN singular_rcond;
    - G ⪯ 0, not ⪰ 0: with A not Hurwitz, range Σ0 leaves the stable subspace (range_stable
      False) when λ_min(Σ0) ≥ (RANGE_MARGIN range_rtol)² tr Σ0, since then
      ‖L0 − U_sU_sᵀL0‖_F ≥ σ_min(L0) > range_rtol‖L0‖_F; with A Hurwitz range_stable is True
      (U_s is all of U), λ_max(W∞Σ0) and its error bound come from `_threshold_bound`, and the
      sign of λ − 1 against threshold_rtol is kept when | |λ − 1| − threshold_rtol | exceeds
      twice that bound (certify's value has a residual of the same size: its error is bounded
      alike) plus THRESHOLD_SLACK max(1, λ)."""
    n, d = A.shape[:2]
    lam, cond, radius = discs.lam, discs.cond, discs.radius
    gmax = np.abs(g).max(axis=1)
    gtol = tol["sign_rtol"] * np.maximum(gmax, _TINY)
    sure = (np.abs(np.abs(g[:, 0]) - gtol) > 0.5 * gtol) & \
        (np.abs(np.abs(g[:, -1]) - gtol) > 0.5 * gtol)
    psd, nsd, nd, pd = g[:, 0] >= -gtol, g[:, -1] <= gtol, g[:, -1] < -gtol, g[:, 0] > gtol
    fro = np.linalg.norm(A, axis=(1, 2))
    re = lam.real
    widen = radius + ROUNDING_ULPS * d * _EPS * cond * fro
    counted = (cond <= EIGVEC_COND_MAX) & \
        (np.abs(re) - widen[:, None] > (tol["axis_rtol"] * fro)[:, None]).all(axis=1)
    left = (re < 0).sum(axis=1)
    right = d - left
    e0 = np.linalg.eigvalsh(cov0)
    ok = sure & counted & ~(psd & nsd) & ~np.any(cov0 - np.swapaxes(cov0, 1, 2), axis=(1, 2)) & \
        (e0[:, 0] > 2 * tol["rank_rtol"] * e0[:, -1]) & (e0[:, 0] > 0)
    # G ⪰ 0, anti-stable modes: unseen = False from the Gramian's conditioning
    a2 = np.linalg.norm(A, 2, axis=(1, 2))
    alpha = np.where(re > 0, re - radius[:, None], np.inf).min(axis=1)
    k = np.maximum(right, 1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # A = 0, G = 0: no rcond
        p_norm = gmax * cond ** 2 / (2 * alpha)
        rcond = g[:, 0] / (2 * np.sqrt(k) * a2 * np.maximum(np.sqrt(k) * p_norm,
                                                            d * gmax / (2 * a2)))
    gram = psd & (right > 0)
    ok &= ~gram | (pd & (alpha > 0) & (rcond >= UNSEEN_MARGIN * tol["singular_rcond"]))
    # G ⪯ 0: range Σ0 in the stable subspace, the threshold
    neg = nsd & ~psd
    hurwitz = left == d
    leaves = ~hurwitz & (e0[:, 0] >= (RANGE_MARGIN * tol["range_rtol"]) ** 2 * e0.sum(axis=1))
    thr = np.full(n, np.nan)
    sign = np.zeros(n, dtype=int)
    inside = np.zeros(n, dtype=bool)
    h = np.flatnonzero(ok & neg & hurwitz)
    if h.size:
        thr[h], bound = _threshold_bound(A[h], G[h], cov0[h], g_err[h], discs[h])
        off = np.abs(thr[h] - 1)
        inside[h] = np.abs(off - tol["threshold_rtol"]) > \
            2 * bound + THRESHOLD_SLACK * np.maximum(1.0, thr[h])
        sign[h] = np.where(off <= tol["threshold_rtol"], 0, np.sign(thr[h] - 1)).astype(int)
    ok &= ~neg | leaves | inside
    out: list[Premises | None] = [None] * n
    for i in np.flatnonzero(ok):
        out[i] = Premises(
            tolerance=tol, g_psd=bool(psd[i]), g_nsd=bool(nsd[i]), g_nd=bool(nd[i]),
            g_pd=bool(pd[i]), n_left=int(left[i]), n_axis=0, n_right=int(right[i]), rank0=d,
            unseen=False if gram[i] else None, observable=True if pd[i] else None,
            range_stable=bool(hurwitz[i]) if neg[i] else None,
            threshold_sign=int(sign[i]) if neg[i] and hurwitz[i] else None,
            threshold=float(thr[i]) if neg[i] and hurwitz[i] else None)
    return out


def _blowups(table: _Table, idx: np.ndarray, A: np.ndarray, G: np.ndarray, covs: np.ndarray,
             prem: list[Premises | None], quadratic: npt.ArrayLike | None,
             discs: _Discs) -> None:
    """T* for the blow-up verdicts idx, on certify's horizon MAX_NORM_TIME / max(‖A‖₂, c‖Σ0‖₂);
    a case whose T* is not found, lies near the horizon or beyond BLOWUP_NORM_TIME of ‖A‖₂,
    or fails certify's own sign-change check (`certificates.blowup_check`) goes to certify.
    discs: `_eigen_discs` of A[idx]."""
    d = A.shape[-1]
    c = np.zeros(idx.size) if quadratic is None else np.asarray(quadratic, float)[idx]
    anorm = np.linalg.norm(A[idx], 2, axis=(1, 2))
    scale = np.maximum(anorm, c * np.linalg.norm(covs[idx], 2, axis=(1, 2)))
    t_max = MAX_NORM_TIME / np.maximum(scale, _TINY)
    L0 = np.zeros((idx.size, d, d))
    for k, i in enumerate(idx):
        L0[k, :, :prem[i].rank0] = cov_root(covs[i], prem[i].rank0)
    gram = _EigenGramian(G[idx], L0, discs)
    T = _blowup_times(A[idx], G[idx], L0, t_max, gram, anorm)
    found = np.isfinite(T) & (T <= (1 - HORIZON_RTOL) * t_max) & (anorm * T <= BLOWUP_NORM_TIME)
    sign = np.zeros(idx.size, dtype=int)
    sign[found] = _check_signs(A[idx[found]], G[idx[found]], L0[found], T[found], gram,
                               np.flatnonzero(found))
    for k, i in enumerate(idx):
        ok = found[k] and (sign[k] > 0 or (sign[k] == 0 and
                                          _confirmed(A[i], G[i], covs[i], T[k])))
        if ok:
            table.blowup_time[i] = T[k]
        else:
            table.drop(i)


def _check_signs(A: np.ndarray, G: np.ndarray, L0: np.ndarray, T: np.ndarray,
                 gram: _EigenGramian, cases: np.ndarray) -> np.ndarray:
    """certify's blow-up check (`certificates.blowup_check`: λ_min(I + L0ᵀW(t)L0) > 0 at
    T(1 − BLOWUP_CHECK_RTOL), < 0 at T(1 + BLOWUP_CHECK_RTOL), W by its stepping) on the stack:
    +1 where it passes and −1 where it fails, both by more than CHECK_MARGIN; 0 in between.
    S(t) from the eigen form where usable (`gram`, its case cases[k] is case k here: rounding
    of about κ₂(X)·eps, ROOT_EIGVEC_COND·eps ≪ CHECK_MARGIN) and finite, by certify's stepping
    with stacked Padé elsewhere; 0 where that is not finite either."""
    r = L0.shape[-1]
    Lt = np.swapaxes(L0, 1, 2)
    fast = gram.usable[cases]
    out = []
    for t in (T * (1 - BLOWUP_CHECK_RTOL), T * (1 + BLOWUP_CHECK_RTOL)):
        S = np.full((T.size, r, r), np.nan)
        S[fast] = gram.at(cases[fast], t[fast])[0]
        slow = ~np.isfinite(S).all(axis=(1, 2))
        S[slow] = np.eye(r) + Lt[slow] @ _gramian_stack(A[slow], G[slow], t[slow]) @ L0[slow]
        e = _eigh_finite(S)[0]
        out.append((e[:, 0], CHECK_MARGIN * (1 + np.abs(e).max(axis=1))))
    (lo, m_lo), (hi, m_hi) = out
    passes = (lo > m_lo) & (hi < -m_hi)
    fails = (lo < -m_lo) | (hi > m_hi)
    return np.where(passes, 1, np.where(fails, -1, 0))


def _gramian_stack(A: np.ndarray, G: np.ndarray, t: np.ndarray) -> np.ndarray:
    """W(t) per case by certify's stepping (certificates._gramian): n = min(⌈‖A‖₂t⌉,
    MAX_GRAMIAN_STEPS) steps (at least 1) of the semigroup rule W(s + h) = W(s) + E_sᵀW(h)E_s."""
    d = A.shape[-1]
    n = np.minimum(np.maximum(1.0, np.ceil(np.linalg.norm(A, 2, axis=(1, 2)) * t)),
                   MAX_GRAMIAN_STEPS).astype(int)
    Eh, Wh = van_loan_stack(A, G, t / n)
    E = np.broadcast_to(np.eye(d), A.shape).copy()
    W = np.zeros(A.shape)
    for k in range(int(n.max(initial=0))):
        on = k < n
        W[on] += np.swapaxes(E[on], 1, 2) @ Wh[on] @ E[on]
        E[on] = Eh[on] @ E[on]
    return 0.5 * (W + np.swapaxes(W, 1, 2))


def stabilizing_found(A: np.ndarray, G: np.ndarray, n_right: int,
                      local_c: float | None = None) -> bool:
    """Whether certify's "psd_gramian_pd" branch gets its equilibrium: `equilibria` solves the
    Bernoulli equation by riccati.bernoulli(A, G) (the same call, so the same Σ), and keeps Σ
    when it is PSD (`is_psd`), of rank n_right, with A − ΣG Hurwitz, and of relative residual
    ≤ ACCEPT_RTOL over its heads. The residual is bounded here from G: ‖AΣ + ΣAᵀ − ΣGΣ‖_F /
    (‖AΣ‖_F + ½‖ΣGΣ‖_F) ≤ ACCEPT_RTOL / 10 implies the heads' residual (whose denominator is
    at least this one's, ‖ΣGΣ‖ ≤ 2Σ_h‖v_hΣB_hΣ‖) is below ACCEPT_RTOL, the rounding of the two
    forms (≈ 1e-14 relative) being far inside the factor 10. local_c: c = 2Σ_h‖V_h‖₂‖B_h‖₂ when
    certify attaches its local Lyapunov certificate at Σ (numerical premises, d ≤
    KRONECKER_MAX_D): it must then provably pass its re-check (`_lyapunov_certified`, with
    d > EXACT_CHECK_MAX_D)."""
    try:
        sol = bernoulli(A, G)
    except SolverError:
        return False
    a, k = exponent(A), exponent(sol.X)  # the ratio is that of (A 2^−a, G 2^(k−a), Σ 2^−k)
    As, Gs, Xs = np.ldexp(A, -a), np.ldexp(G, k - a), np.ldexp(sol.X, -k)
    AX, XGX = As @ Xs, Xs @ Gs @ Xs
    scale = np.linalg.norm(AX) + 0.5 * np.linalg.norm(XGX)
    res = np.linalg.norm(AX + AX.T - XGX) / scale if scale > 0 else np.inf
    found = bool(is_psd(sol.X) and sol.rank == n_right and np.max(sol.closed_loop.real) < 0
                 and res <= ACCEPT_RTOL / 10)
    if not found or local_c is None:
        return found
    Mc = (A - sol.X @ G)[None]
    norm = np.linalg.norm(A, 2) + local_c * np.linalg.norm(sol.X, 2)
    return bool(A.shape[0] > EXACT_CHECK_MAX_D and
                _lyapunov_certified(Mc, _eigen_discs(Mc), np.array([norm]))[0])


def _confirmed(A: np.ndarray, G: np.ndarray, cov0: np.ndarray, T: float) -> bool:
    try:
        return blowup_check(A, G, cov0, float(T))
    except (LinAlgError, ValueError, ArithmeticError):
        return False


def _case_premises(A: np.ndarray,
                   heads: tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]],
                   i: int | np.integer, cov0: np.ndarray
                   ) -> tuple[Premises | None, np.ndarray]:
    """certify's own premises for case i (certificates.premises on the validated layer), and
    the Σ0 certify works with; (None, Σ0) where certify would refuse or fail."""
    V, B = heads
    try:
        p = Params(A=A, heads=[(Vh[i], Bh[i]) for Vh, Bh in zip(V, B, strict=True)])
        cov = as_covariance("cov0", cov0, p.d)
        with numerical_failures("certify"):
            return premises(p, cov), cov
    except (InvalidInputError, SolverError):
        return None, cov0


def _default_g_error(G: np.ndarray, quadratic: npt.ArrayLike | None) -> np.ndarray:
    """G's rounding without the heads: G_ROUND_ULPS eps max(‖G‖_F, √d c)."""
    scale = np.linalg.norm(G, axis=(1, 2))
    if quadratic is not None:
        scale = np.maximum(scale, np.sqrt(G.shape[-1]) * np.asarray(quadratic, float))
    return G_ROUND_ULPS * _EPS * scale


