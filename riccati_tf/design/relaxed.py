"""The relaxed certified-safe set of scalar-value layers with a Hurwitz A, its witness and the
nearest G in it (SPEC §5).

For scalar heads the covariance flow is Σ̇ = AΣ + ΣAᵀ − ΣGΣ with the closed form
Σ(t) = e^{At}L0(I + L0ᵀW(t)L0)⁻¹L0ᵀe^{Aᵀt}, W(t) = ∫_0^t e^{Aᵀs}Ge^{As}ds (Σ0 = L0L0ᵀ). Split
G = P − N with P, N ⪰ 0: W(t) = W_P(t) − W_N(t) ⪰ −W∞(N), where AᵀW∞(N) + W∞(N)A = −N (A
Hurwitz, W∞(N) = ∫_0^∞ e^{Aᵀs}Ne^{As}ds ⪰ W_N(t)). Hence

    I + L0ᵀW(t)L0 ⪰ I − L0ᵀW∞(N)L0 ≻ 0   for all t ≥ 0   when   λ_max(L0ᵀW∞(N)L0) < 1,

and Σ(t) exists for all t from that start; with A Hurwitz and the inverse bounded it collapses.
The set

    𝒮 = {G : ∃ N ⪰ 0, G + N ⪰ 0, λ_max(L0ᵀW∞(N)L0) ≤ 1 − m for every start}

is convex (W∞ is linear in N) and contains both sets of SPEC §5's theorems, G ⪰ 0 (N = 0) and
G ⪯ 0 below the threshold (N = −G). N is the witness: `witness_holds` re-decides it.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import eigh, solve_continuous_lyapunov
from scipy.optimize import minimize

__all__ = ["RELAXED_SET", "SEMIDEFINITE_SET", "nearest_relaxed", "witness_holds"]

#: the set searched for scalar heads with A Hurwitz (change "B"), in words
RELAXED_SET = ("G = P − N with P, N ⪰ 0 and λ_max(L0ᵀW∞(N)L0) ≤ 1 − margin for every start "
               "(AᵀW∞ + W∞A = −N)")
#: the set searched for scalar heads otherwise (change "B")
SEMIDEFINITE_SET = "G ⪰ δI"
#: SLSQP's iterations per run, and its tolerance on the squared distance
_MAXITER, _FTOL = 500, 1e-15


def witness_holds(A: np.ndarray, G: np.ndarray, N: np.ndarray, roots: list[np.ndarray]) -> bool:
    """Whether N proves that no start Σ0 = L0L0ᵀ (L0 in `roots`) blows up under
    Σ̇ = AΣ + ΣAᵀ − ΣGΣ: A Hurwitz and

        λ_max(L0ᵀW∞(N')L0) < 1,   AᵀW∞(N') + W∞(N')A = −N',   N' = N₊ + εI,

    N₊ the PSD part of N and ε = max(0, −λ_min(G + N₊)) plus 4 d eps ‖G + N₊‖₂, so that
    G = (G + N') − N' with both parts ⪰ 0 (module docstring: W(t) ⪰ −W∞(N')).

    Parameters
    ----------
    A : (d, d) ndarray
        The drift.
    G : (d, d) ndarray
        G = −Σ_h v_h(B_h + B_hᵀ) of the scalar heads.
    N : (d, d) ndarray
        The witness (its PSD part is used).
    roots : list of (d, r) ndarray
        The factors L0 of the starts.

    Returns
    -------
    bool
        True when every premise holds; False otherwise (also for non-finite input).

    Raises
    ------
    None
        Failures of the linear algebra give False.

    See Also
    --------
    nearest_relaxed : finds the nearest G of the set and its witness.

    Notes
    -----
    Hurwitz: W_I ≻ 0 with AᵀW_I + W_IA = −I + R_I, ‖R_I‖₂ ≤ ½ (a Lyapunov function). The
    threshold allows for the Lyapunov solve's residual R = AᵀW + WA + N': the exact W∞(N') is
    W − W∞(R) ⪯ W + ‖R‖₂ W∞(I), and W∞(I) ⪯ 2 W_I, so λ_max(L0ᵀW L0) + 2‖R‖₂ λ_max(L0ᵀW_I L0)
    < 1 (with 4 d eps relative for the eigensolver) suffices.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up" (the closed form and the threshold λ_max(W∞Σ0) < 1).

    Examples
    --------
    A = −I, G = −I: N = I gives W∞ = I/2, so starts of λ_max(Σ0) < 2 are safe.

    >>> import numpy as np
    >>> from riccati_tf.design.relaxed import witness_holds
    >>> I = np.eye(2)
    >>> witness_holds(-I, -I, I, [np.sqrt(1.9) * I]), witness_holds(-I, -I, I, [np.sqrt(2.1) * I])
    (True, False)
    """
    d = A.shape[0]
    eps = float(np.finfo(float).eps)
    try:
        WI = solve_continuous_lyapunov(A.T, -np.eye(d))
        WI = (WI + WI.T) / 2
        if not (np.all(np.isfinite(WI)) and np.linalg.norm(A.T @ WI + WI @ A + np.eye(d), 2) <= 0.5
                and np.linalg.eigvalsh(WI)[0] > 0):
            return False
        lam, U = np.linalg.eigh((N + N.T) / 2)
        Np = (U * np.maximum(lam, 0.0)) @ U.T
        S = G + Np
        low = np.linalg.eigvalsh((S + S.T) / 2)
        slack = 4 * d * eps * float(np.abs(low).max())
        Nw = Np + max(0.0, -float(low[0]) + slack) * np.eye(d)
        W = solve_continuous_lyapunov(A.T, -Nw)
        W = (W + W.T) / 2
        res = float(np.linalg.norm(A.T @ W + W @ A + Nw, 2))
        for L in roots:
            top = float(np.linalg.eigvalsh(L.T @ W @ L)[-1])
            allowance = 2 * res * float(np.linalg.eigvalsh(L.T @ WI @ L)[-1])
            if not (np.isfinite(top) and top + allowance + 4 * d * eps * abs(top) < 1):
                return False
    except (ValueError, np.linalg.LinAlgError):
        return False
    return True


def nearest_relaxed(A: np.ndarray, G0: np.ndarray, roots: list[np.ndarray], m: float,
                    starts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:
    """(C, N) with G0 + C in the relaxed set (margin m) and ‖C‖_F least as found by SLSQP:

        min ‖C‖_F   s.t.   G0 + C + N ⪰ 0,  N ⪰ 0,  λ_max(L0ᵀW∞(N)L0) ≤ 1 − m  (every start).

    Parameters
    ----------
    A : (d, d) ndarray
        A Hurwitz drift.
    G0 : (d, d) ndarray
        G of the layer given.
    roots : list of (d, r) ndarray
        The factors L0 of the starts Σ0 = L0L0ᵀ.
    m : float
        The relative margin of the threshold, 0 ≤ m < 1.
    starts : list of (d, d) ndarray
        Where SLSQP starts, as values of N (each scaled into the threshold).

    Returns
    -------
    (C, N) or None
        The change C of G and the witness N of the best answer whose witness holds
        (`witness_holds`); None when no answer's does.

    Raises
    ------
    None
        SLSQP runs that leave the finite numbers are skipped.

    See Also
    --------
    witness_holds : re-decides the witness.
    riccati_tf.design.repair.nearest_stable : the repair that uses this set.

    Notes
    -----
    For a fixed N the least C with G0 + C + N ⪰ 0 is C = (G0 + N)₋ (the negative part,
    negated): its cost f(N) = ‖(G0 + N)₋‖_F² is convex and differentiable, with gradient −2C,
    and the set of N is convex, so the problem is convex. N = MMᵀ (M d×d free, so N ⪰ 0 holds
    by construction): SLSQP minimises f(MMᵀ) (gradient −4CM) subject to
    λ_min((1 − m)I − L0ᵀW∞(MMᵀ)L0) ≥ 0 per start (gradient −2YM with AY + YAᵀ = −zzᵀ,
    z = L0u, u the bottom eigenvector; smooth for a rank-one start), from the square root of
    each N in `starts` (scaled into the threshold, plus 1e-3 I so that it is not the saddle
    M = 0) and again from its answer. The answer is the nearest SLSQP reaches; the tests
    compare it with an independent multi-start search of the same set.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".
    .. [2] S. Burer and R. D. C. Monteiro, "A nonlinear programming algorithm for solving
       semidefinite programs via low-rank factorization", Math. Program. 95 (2003) 329–357.

    Examples
    --------
    A = −I, G0 = diag(−3, 1), the start e1e1ᵀ: N11 ≤ 2(1 − m) is allowed, so C = diag(1, 0)
    instead of the clipping's diag(3, 0).

    >>> import numpy as np
    >>> from riccati_tf.design.relaxed import nearest_relaxed
    >>> C, N = nearest_relaxed(-np.eye(2), np.diag([-3.0, 1.0]), [np.array([[1.0], [0.0]])],
    ...                        1e-6, [np.zeros((2, 2))])
    >>> round(float(np.linalg.norm(C)), 4)
    1.0
    """
    d = A.shape[0]

    def clip(N: np.ndarray) -> np.ndarray:
        lam, U = eigh(G0 + N)
        return (U * np.maximum(-lam, 0.0)) @ U.T

    def cost(x: np.ndarray) -> tuple[float, np.ndarray]:
        M = x.reshape(d, d)
        C = clip(M @ M.T)
        return float(np.sum(C * C)), (-4 * C @ M).ravel()

    def lowest(x: np.ndarray, L: np.ndarray) -> tuple[float, np.ndarray]:
        M = x.reshape(d, d)
        W = solve_continuous_lyapunov(A.T, -(M @ M.T))
        lam, vec = eigh((1 - m) * np.eye(L.shape[1]) - L.T @ W @ L)
        z = L @ vec[:, 0]
        Y = solve_continuous_lyapunov(A, -np.outer(z, z))
        return float(lam[0]), (-2 * Y @ M).ravel()

    cons = [{"type": "ineq", "fun": lambda x, L=L: lowest(x, L)[0],
             "jac": lambda x, L=L: lowest(x, L)[1]} for L in roots]
    best: tuple[float, np.ndarray] | None = None
    for N0 in starts:
        x = _into_threshold(A, N0, roots, m).ravel()
        try:
            for _ in range(2):
                x = np.asarray(minimize(lambda y: cost(y)[0], x, jac=lambda y: cost(y)[1],
                                        constraints=cons, method="SLSQP",
                                        options={"maxiter": _MAXITER, "ftol": _FTOL}).x)
        except (ValueError, np.linalg.LinAlgError):  # eigh of a non-finite iterate
            continue
        if not np.all(np.isfinite(x)):
            continue
        M = x.reshape(d, d)
        f = cost(x)[0]
        if witness_holds(A, G0 + clip(M @ M.T), M @ M.T, roots) and (best is None
                                                                     or f < best[0]):
            best = (f, M @ M.T)
    if best is None:
        return None
    return clip(best[1]), best[1]


def _into_threshold(A: np.ndarray, N0: np.ndarray, roots: list[np.ndarray],
                    m: float) -> np.ndarray:
    """M with MMᵀ = t(N0₊ + 1e-3 s I), s = max(‖N0‖₂, 1), t ≤ 1 the largest with
    λ_max(L0ᵀW∞(MMᵀ)L0) ≤ 1 − m/2 for every start."""
    lam, U = eigh((N0 + N0.T) / 2)
    lam = np.maximum(lam, 0.0) + 1e-3 * max(float(np.abs(lam).max()), 1.0)
    M = U * np.sqrt(lam)
    W = solve_continuous_lyapunov(A.T, -(M @ M.T))
    top = max((float(np.linalg.eigvalsh(L.T @ W @ L)[-1]) for L in roots), default=0.0)
    return M * (np.sqrt(min(1.0, (1 - m / 2) / top)) if top > 0 else 1.0)
