"""Blow-up times of stacks of layers: the first t with det(I + W(t)Σ0) = 0 (SPEC §5), by a march
over the Gramian W(t) and a Newton search on λ_min(I + LᵀW(t)L), each bracket checked."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from .constants import _EPS, MAX_ROOT_STEPS, POLISH_RTOL, ROOT_EIGVEC_COND, STEPS_PER_LEVEL
from .margins import _eigen_discs
from .stack import _Discs, _lam_min, van_loan_stack

__all__: list[str] = []  # blowup_times: riccati_tf.sweep.batched


def blowup_times(A: npt.NDArray[np.float64], G: npt.NDArray[np.float64],
                 L: npt.NDArray[np.float64], t_max: npt.NDArray[np.float64]
                 ) -> npt.NDArray[np.float64]:
    """First root T* of λ_min(I + LᵀW(t)L) for G ⪯ 0 (a decreasing function of t), per case.

    The blow-up time of Σ̇ = AΣ + ΣAᵀ − ΣGΣ from Σ0 = LLᵀ: the closed form
    Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt}, W(t) = ∫_0^t e^{Aᵀu} G e^{Au} du, leaves every bounded
    set when I + LᵀW(t)L first becomes singular. March: steps 2^j h (h = 1/‖A‖₂,
    STEPS_PER_LEVEL steps per j) composed exactly by the semigroup rule
    W(t + h) = W(t) + E_tᵀW(h)E_t, until λ_min ≤ 0; descent: halve the bracket with the stored
    steps down to h; then Newton's method kept inside the bracket on offsets s ∈ (0, h]
    (f'(s) = wᵀGw from the eigenvector of λ_min; a step leaving the bracket is a bisection),
    to 4·eps relative, on the eigen form of W (`_EigenGramian`) where A's eigenvector matrix
    has κ₂ ≤ ROOT_EIGVEC_COND, else W(s) by stacked Padé.

    Parameters
    ----------
    A : (n, d, d) ndarray of float
        The drift matrices.
    G : (n, d, d) ndarray of float, symmetric negative semidefinite
        G = −Σ_h v_h(B_h + B_hᵀ) per case (G ⪯ 0 makes λ_min decreasing in t).
    L : (n, d, r) ndarray of float
        Factors of Σ0 = LLᵀ per case (zero columns allowed).
    t_max : (n,) ndarray of float
        The horizon of the search per case.

    Returns
    -------
    (n,) ndarray of float
        T* per case; NaN where no root lies in (0, t_max].

    Raises
    ------
    numpy.linalg.LinAlgError
        When an eigenvalue solve of a non-finite stack fails.

    See Also
    --------
    van_loan_stack : the stacked (e^{As}, W(s)) the march is built from.
    classify_scalar : confirms each T* with certify's own sign-change check.
    riccati_tf.certify : the per-case blow-up certificate.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] C. F. Van Loan, "Computing integrals involving the matrix exponential", IEEE TAC
       23(3), 1978.

    Examples
    --------
    A scalar layer ẋ = −x² (A = 0, G = −2, Σ0 = 1) blows up at T* = 1/2:

    >>> import numpy as np
    >>> from riccati_tf.sweep.batched import blowup_times
    >>> T = blowup_times(np.zeros((1, 1, 1)), np.full((1, 1, 1), -2.0), np.ones((1, 1, 1)),
    ...                  np.array([10.0]))
    >>> print(round(float(T[0]), 12))
    0.5

    No root before the horizon gives NaN:

    >>> blowup_times(np.zeros((1, 1, 1)), np.full((1, 1, 1), -2.0), np.ones((1, 1, 1)),
    ...              np.array([0.25]))
    array([nan])
    """
    return _blowup_times(A, G, L, t_max, _EigenGramian(G, L, _eigen_discs(A)))


def _blowup_times(A: np.ndarray, G: np.ndarray, L: np.ndarray, t_max: np.ndarray,
                  gram: _EigenGramian, norm: np.ndarray | None = None) -> np.ndarray:
    """`blowup_times` with the eigen form of S(t) given (`gram`, for the same A, G and L), and
    ‖A‖₂ per case when the caller has it (`norm`)."""
    n, d, r = L.shape
    out = np.full(n, np.nan)
    if n == 0:
        return out
    if norm is None:
        norm = np.linalg.norm(A, 2, axis=(1, 2))
    h = np.where(norm > 0, 1.0 / np.where(norm > 0, norm, 1.0), 1.0)
    h = np.minimum(h, t_max)
    eye_r = np.eye(r)
    Lt = np.swapaxes(L, 1, 2)
    ladder = [van_loan_stack(A, G, h)]  # ladder[j] = (E, W) of a step 2^j h

    def ensure(level: int) -> None:
        while len(ladder) <= level:
            E, W = ladder[-1]
            ladder.append((E @ E, W + np.swapaxes(E, 1, 2) @ W @ E))

    t_a = np.zeros(n)
    E_a = np.broadcast_to(np.eye(d), (n, d, d)).copy()
    W_a = np.zeros((n, d, d))
    level = np.zeros(n, dtype=int)
    steps = np.zeros(n, dtype=int)
    active = np.ones(n, dtype=bool)
    bracketed = np.zeros(n, dtype=bool)
    with np.errstate(over="ignore", invalid="ignore"):
        while np.any(active):
            for j in np.unique(level[active]):
                ensure(int(j))
                idx = np.flatnonzero(active & (level == j))
                Ej, Wj = ladder[j][0][idx], ladder[j][1][idx]
                Ea, Wa = E_a[idx], W_a[idx]
                W_b = Wa + np.swapaxes(Ea, 1, 2) @ Wj @ Ea
                lam = _lam_min(eye_r + Lt[idx] @ W_b @ L[idx])
                hit = lam <= 0
                bracketed[idx[hit]] = True
                active[idx[hit]] = False
                move = idx[~hit]
                t_a[move] += (2.0 ** j) * h[move]
                W_a[move], E_a[move] = W_b[~hit], Ej[~hit] @ Ea[~hit]
                steps[move] += 1
                up = move[steps[move] >= STEPS_PER_LEVEL]
                level[up] += 1
                steps[up] = 0
            lost = active & ((t_a > t_max) | ~np.isfinite(W_a).all(axis=(1, 2)))
            active &= ~lost
        # descent: the bracket [t_a, t_a + 2^level h] halves down to one step h
        for j in range(int(level.max(initial=0)) - 1, -1, -1):
            idx = np.flatnonzero(bracketed & (level > j))
            if idx.size == 0:
                continue
            Ea, Wa = E_a[idx], W_a[idx]
            Ej, Wj = ladder[j][0][idx], ladder[j][1][idx]
            W_m = Wa + np.swapaxes(Ea, 1, 2) @ Wj @ Ea
            pos = _lam_min(eye_r + Lt[idx] @ W_m @ L[idx]) > 0
            move = idx[pos]
            t_a[move] += (2.0 ** j) * h[move]
            W_a[move], E_a[move] = W_m[pos], Ej[pos] @ Ea[pos]
            level[idx] = j
    idx = np.flatnonzero(bracketed)
    if idx.size:
        out[idx] = t_a[idx] + _root_in_step(A[idx], G[idx], L[idx], E_a[idx], W_a[idx], h[idx],
                                            t_a[idx], gram, idx)
    out[out > t_max] = np.nan
    return out


def _root_in_step(A: np.ndarray, G: np.ndarray, L: np.ndarray, E_a: np.ndarray,
                  W_a: np.ndarray, h: np.ndarray, t_a: np.ndarray, gram: _EigenGramian,
                  cases: np.ndarray) -> np.ndarray:
    """The root s ∈ (0, h] of λ_min(I + LᵀW(t_a + s)L) in the step bracketed by the march, as
    found with stacked Padé exponentials (`_van_loan_offsets`). Where the eigen form is usable
    (`gram`, whose case cases[k] is case k here), Newton's method runs on it and one Newton step
    on the Padé form finishes the root (quadratic convergence from within a few κ₂(X)·eps: the
    root of the Padé form to rounding); a case whose last step is longer than POLISH_RTOL
    (t_a + s), or leaves the bracket, is searched on the Padé form from the start."""
    f_pade, f0, d0 = _van_loan_offsets(A, G, L, E_a, W_a)  # f(0), f'(0): for both forms
    out = np.full(h.size, np.nan)
    fast = np.flatnonzero(gram.usable[cases])
    if fast.size:
        f_eig = gram.offsets(cases[fast], t_a[fast])
        out[fast] = _newton_root(f_eig, f0[fast], d0[fast], h[fast], t_a[fast])
        done = fast[np.isfinite(out[fast])]
        f, slope = f_pade(done, out[done])
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(slope < 0, f / slope, np.nan)
        s = out[done] - step
        out[done] = np.where((s > 0) & (s <= h[done]) &
                             (np.abs(step) <= POLISH_RTOL * (t_a[done] + s)), s, np.nan)
    rest = np.flatnonzero(np.isnan(out))
    if rest.size:
        def f_rest(idx: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return f_pade(rest[idx], s)
        out[rest] = _newton_root(f_rest, f0[rest], d0[rest], h[rest], t_a[rest])
    return out


#: (f(s), f'(s)) on the cases idx at offsets s: the function whose root `_newton_root` finds
_Offsets = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def _van_loan_offsets(A: np.ndarray, G: np.ndarray, L: np.ndarray, E_a: np.ndarray,
                      W_a: np.ndarray) -> tuple[_Offsets, np.ndarray, np.ndarray]:
    """(f, f(0), f'(0)): f(s) = λ_min(S_a + MᵀW(s)M), S_a = I + LᵀW_aL, M = E_aL (the state at
    t_a + s by the semigroup rule), and f'(s) = wᵀGw with w = E_sMu (u the unit eigenvector of
    λ_min, so f' = uᵀMᵀ(dW/ds)Mu with dW/ds = E_sᵀGE_s), W(s) by stacked Padé
    (`van_loan_stack`); at s = 0 (E_0 = I, W(0) = 0) no exponential is needed."""
    M = E_a @ L
    Mt = np.swapaxes(M, 1, 2)
    S_a = np.eye(L.shape[2]) + np.swapaxes(L, 1, 2) @ W_a @ L
    lam0, vec0 = _eigh_finite(S_a)
    w0 = M @ vec0[:, :, :1]

    def f(idx: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        E, W = van_loan_stack(A[idx], G[idx], s)
        lam, vec = _eigh_finite(S_a[idx] + Mt[idx] @ W @ M[idx])
        w = E @ M[idx] @ vec[:, :, :1]
        return lam[:, 0], (np.swapaxes(w, 1, 2) @ G[idx] @ w)[:, 0, 0]
    return f, lam0[:, 0], (np.swapaxes(w0, 1, 2) @ G @ w0)[:, 0, 0]


class _EigenGramian:
    """S(t) = I + LᵀW(t)L per case from one eigendecomposition A = XΛX⁻¹: with Y = X⁻¹L,
    H = XᵀGX and Z_ij = λ_i + λ_j,

        LᵀW(t)L = Yᵀ(H ∘ F(t))Y,  F_ij(t) = ∫_0^t e^{Z_ij u} du = (e^{Z_ij t} − 1)/Z_ij,
        d/dt uᵀS(t)u = wᵀ(H ∘ e^{Zt})w,  w = Yu,

    real up to rounding (conjugate pairs), F by expm1 (t where Z_ij t = 0): a few k×k complex
    products a value instead of a 2k×2k Padé exponential. The rounding grows with κ₂(X): only
    cases with κ₂(X) ≤ ROOT_EIGVEC_COND are `usable`; the others are left to stacked Padé.
    discs: `_eigen_discs` of A."""

    def __init__(self, G: np.ndarray, L: np.ndarray, discs: _Discs) -> None:
        with np.errstate(invalid="ignore"):
            self.usable = discs.cond <= ROOT_EIGVEC_COND
        X = np.where(self.usable[:, None, None], discs.vec, np.eye(G.shape[-1]))
        self.Y = np.linalg.solve(X, L)
        self.Yt = np.swapaxes(self.Y, 1, 2)
        self.H = np.swapaxes(X, 1, 2) @ G @ X
        self.Z = discs.lam[:, :, None] + discs.lam[:, None, :]
        self.eye = np.eye(L.shape[2])

    def at(self, idx: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(S(t), e^{Zt}) for the cases idx at times t (S symmetrised)."""
        Z = self.Z[idx]
        t = t[:, None, None]
        Zt = Z * t
        zero = Zt == 0
        F = np.where(zero, t, np.expm1(Zt) / np.where(zero, 1.0, Z))
        S = self.eye + (self.Yt[idx] @ (self.H[idx] * F) @ self.Y[idx]).real
        return 0.5 * (S + np.swapaxes(S, 1, 2)), np.exp(Zt)

    def offsets(self, cases: np.ndarray, t_a: np.ndarray) -> _Offsets:
        """The f of `_van_loan_offsets` for the cases `cases` at t_a + s (t_a per case)."""
        def f(idx: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            S, expZ = self.at(cases[idx], t_a[idx] + s)
            lam, vec = _eigh_finite(S)
            w = self.Y[cases[idx]] @ vec[:, :, :1]
            return lam[:, 0], (np.swapaxes(w, 1, 2) @ (self.H[cases[idx]] * expZ) @ w)[:, 0, 0].real
        return f


def _eigh_finite(S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.linalg.eigh per case, NaN for a case with a non-finite entry (an overflowing W(t):
    LAPACK may not converge on it); `_newton_root` then leaves that case unresolved."""
    lam, vec = np.full(S.shape[:2], np.nan), np.full(S.shape, np.nan)
    ok = np.isfinite(S).all(axis=(1, 2))
    if ok.any():
        lam[ok], vec[ok] = np.linalg.eigh(S[ok])
    return lam, vec


def _newton_root(f: _Offsets, f_lo: np.ndarray, d_lo: np.ndarray, h: np.ndarray,
                 t_a: np.ndarray) -> np.ndarray:
    """Root s ∈ (0, h] of a decreasing f with f(0) = f_lo > 0 ≥ f(h) (f'(0) = d_lo), per case.

    Newton's method on the bracket [lo, hi], f(lo) > 0 ≥ f(hi), both ends kept with their f and
    f' (f' ≤ 0 for G ⪯ 0): each step starts from the end where |f| is smaller, so that a root
    found to rounding from either side ends the search at once. A step that would leave the
    bracket, or (after the first) is not at most half the previous step (f' ≥ 0, or no quadratic
    convergence: f at rounding level), is a bisection instead. Stops when the Newton step is at
    most 4·eps(t_a + s) long (the result is its end) or the bracket is that narrow (its
    midpoint), after at most MAX_ROOT_STEPS iterations. NaN where f(h) > 0 or is not finite (the
    bracket does not hold for this f)."""
    n = h.size
    lo, f_lo, d_lo = np.zeros(n), f_lo.copy(), d_lo.copy()
    hi = h.copy()
    f_hi, d_hi = f(np.arange(n), hi)
    last = np.full(n, np.inf)
    out = np.full(n, np.nan)
    out[f_hi == 0] = hi[f_hi == 0]
    active = f_hi < 0
    unresolved = ~(f_hi <= 0)
    for _ in range(MAX_ROOT_STEPS):
        active &= (hi - lo) > 4 * _EPS * (t_a + hi)
        from_lo = np.abs(f_lo) < np.abs(f_hi)
        x = np.where(from_lo, lo, hi)
        fx, dx = np.where(from_lo, f_lo, f_hi), np.where(from_lo, d_lo, d_hi)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(dx < 0, fx / dx, np.nan)
        converged = active & (np.abs(step) <= 4 * _EPS * (t_a + x))
        out[converged] = x[converged] - step[converged]
        active &= ~converged
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        a, b, y = lo[idx], hi[idx], x[idx] - step[idx]
        newton = (y > a) & (y < b) & (np.abs(step[idx]) <= 0.5 * last[idx])
        y = np.where(newton, y, 0.5 * (a + b))
        last[idx] = np.where(newton, np.abs(step[idx]), 0.5 * (b - a))
        fy, dy = f(idx, y)
        zero = fy == 0
        out[idx[zero]] = y[zero]
        active[idx[zero]] = False
        lost = ~np.isfinite(fy)
        unresolved[idx[lost]] = True
        active[idx[lost]] = False
        up, down = idx[fy > 0], idx[fy < 0]
        lo[up], f_lo[up], d_lo[up] = y[fy > 0], fy[fy > 0], dy[fy > 0]
        hi[down], f_hi[down], d_hi[down] = y[fy < 0], fy[fy < 0], dy[fy < 0]
    rest = np.isnan(out)
    out[rest] = 0.5 * (lo[rest] + hi[rest])
    out[unresolved] = np.nan
    return out

