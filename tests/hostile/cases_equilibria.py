"""Hostile cases for the equilibria and the Riccati layer (area "equilibria"): `equilibria`
(which="stable"/"all", starts, tolerances), the public solvers of `riccati_tf.stability.riccati`
(bernoulli, care_g, lyapunov_function, schur_split) and `Certificate.linearization()`, at
extreme and mixed magnitudes, near the imaginary axis, with malformed options.

Every result is checked against references written here, independent of the package:
- the relative residual ‖F(Σ*)‖_F / (‖AΣ*‖_F + Σ_h‖V_hΣ*B_hΣ*‖_F) recomputed in mpmath at 60
  digits from the floats as given (no under- or overflow at any magnitude), ≤ 1e-9 (the
  package's promise), Σ* symmetric PSD;
- stability from the linearisation L(H) = MH + HMᵀ + Σ_h(V_hHB_hΣ* + Σ*B_hᵀHV_hᵀ) assembled
  here in mpmath on the symmetric matrices;
- closed forms for diagonal data: with A = diag(a), G = −Σ_h v_h(B_h + B_hᵀ) = diag(g) and
  distinct a_i, the covariance equilibria are diag(σ) with σ_i ∈ {0, 2a_i/g_i} (the second only
  when a_i g_i > 0), and the stable one takes 2a_i/g_i exactly where a_i > 0 (the inverse of P*
  with AᵀP* + P*A = G on the anti-stable part);
- the CARE AᵀX + XA − XGX + Q = 0 and the Lyapunov equation LᵀP + PL = −Q by their residuals in
  mpmath, the scalar CARE by its root (a + √(a² + gq))/g.
"""

from __future__ import annotations

import itertools

import mpmath as mp
import numpy as np

from riccati_tf import Params, certify, equilibria
from riccati_tf.stability.equilibria.newton import newton
from riccati_tf.stability.riccati import bernoulli, care_g, lyapunov_function
from riccati_tf.stability.riccati.schur import schur_split

from . import cases_of

AREA = "equilibria"
ACCEPT = 1e-9  # the residual the package promises (equilibrium.ACCEPT_RTOL)
DPS = 60


# ---------------------------------------------------------------- references (mpmath)


def mpm(M) -> mp.matrix:
    M = np.atleast_2d(np.asarray(M, dtype=float))
    return mp.matrix([[mp.mpf(float(x)) for x in row] for row in M])


def fro(M: mp.matrix) -> mp.mpf:
    return mp.sqrt(sum(M[i, j] ** 2 for i in range(M.rows) for j in range(M.cols)))


def residual(p: Params, S) -> mp.mpf:
    """Relative residual of F at Σ, exactly from the floats (60 digits)."""
    with mp.workdps(DPS):
        A, S = mpm(p.A), mpm(S)
        AS = A * S
        F, scale = AS + AS.T, fro(AS)
        for V, B in p.heads:
            W = mpm(V) * S * mpm(B) * S
            F, scale = F + W + W.T, scale + fro(W)
        return fro(F) / scale if scale else mp.mpf(0)


def sym_eigs(S) -> list:
    with mp.workdps(DPS):
        return sorted(mp.eigsy(mpm(S), eigvals_only=True))


def abscissa(p: Params, S) -> mp.mpf:
    """max Re λ of L at Σ on Sym(d), in mpmath (basis E_ij = e_ie_jᵀ + e_je_iᵀ, i ≤ j)."""
    d = p.d
    with mp.workdps(DPS):
        Sm = mpm(S)
        heads = [(mpm(V), mpm(B)) for V, B in p.heads]
        M = mpm(p.A)
        for V, B in heads:
            M = M + V * Sm * B
        pairs = [(i, j) for i in range(d) for j in range(i, d)]
        L = mp.matrix(len(pairs), len(pairs))
        for k, (i, j) in enumerate(pairs):
            E = mp.matrix(d, d)
            E[i, j] = E[j, i] = 1
            out = M * E + E * M.T
            for V, B in heads:
                W = V * E * B * Sm
                out = out + W + (Sm * B.T * E * V.T)
            for r, (a, b) in enumerate(pairs):
                L[r, k] = out[a, b]
        return max(mp.re(x) for x in mp.eig(L, left=False, right=False))


def check_equilibrium(p: Params, eq, *, stable: bool | None = None) -> None:
    """Σ* finite, symmetric, PSD of the stated rank, residual ≤ ACCEPT, and the stated stability
    agreeing with the spectrum of L (checked where that spectrum is clear of 0)."""
    S = eq.cov
    assert np.all(np.isfinite(S)), "Σ* holds NaN/Inf"
    assert np.array_equal(S, S.T), "Σ* is not symmetric"
    res = residual(p, S)
    assert res <= ACCEPT, f"residual {mp.nstr(res, 3)} > {ACCEPT}"
    ev = sym_eigs(S)
    top = max(abs(ev[-1]), mp.mpf(10) ** -300)
    assert ev[0] >= -1e-9 * top, f"Σ* is not PSD (λ_min = {mp.nstr(ev[0], 3)})"
    # the rank is structural for Bernoulli solutions (the invariant subspace's dimension):
    # between the clearly positive eigenvalues and those above the rounding of Σ*
    big, seen = (sum(1 for x in ev if x > r * top) for r in (1e-9, 1e-13))
    assert big <= eq.rank <= seen, f"rank {eq.rank} for eigenvalues {[mp.nstr(x, 3) for x in ev]}"
    with mp.workdps(DPS):
        sa = abscissa(p, S) if np.any(S) else 2 * max(mp.re(x) for x in mp.eig(
            mpm(p.A), left=False, right=False))
    scale = max(fro(mpm(p.A)), mp.mpf(10) ** -320)
    if abs(sa) > 1e-8 * scale:
        assert eq.stable == (sa < 0), f"stability misreported (abscissa {mp.nstr(sa, 3)})"
    if stable is not None:
        assert eq.stable == stable, "an unstable equilibrium among the stable ones"


def diag_equilibria(a, g, which: str) -> list[np.ndarray]:
    """Closed form for A = diag(a), G = diag(g) with distinct a_i off the axis (module doc)."""
    choices = []
    for ai, gi in zip(a, g, strict=True):
        with mp.workdps(DPS):
            root = 2 * mp.mpf(float(ai)) / mp.mpf(float(gi)) if gi != 0 else None
        if which == "stable":
            if ai > 0 and (root is None or root <= 0):
                return []  # no stabilizing covariance solution
            choices.append([root if ai > 0 else mp.mpf(0)])
        else:
            choices.append([mp.mpf(0)] + ([root] if root is not None and root > 0 else []))
    return [np.diag([float(x) for x in pick]) for pick in itertools.product(*choices)]


def same_set(got: list[np.ndarray], ref: list[np.ndarray], rtol: float = 1e-12) -> None:
    assert len(got) == len(ref), f"{len(got)} equilibria, the closed form has {len(ref)}"
    left = list(ref)
    for S in got:
        hit = next((k for k, R in enumerate(left) if np.allclose(S, R, rtol=rtol, atol=0)), None)
        assert hit is not None, f"an equilibrium not in the closed form: diag {np.diag(S)}"
        left.pop(hit)


# ---------------------------------------------------------------- scalar V, diagonal: closed forms


def diag_layer(a, g, s: float = 1.0) -> Params:
    """A = s·diag(a), one head V = −s I, B = diag(g)/2: G = s·diag(g) (exact halving)."""
    return Params(A=s * np.diag(a), V=-s * np.eye(len(a)), B=0.5 * np.diag(g))


def closed_form_case(item) -> None:
    a, g, s, which = item
    p = diag_layer(a, g, s)
    got = equilibria(p, which=which)
    aa, gg = np.diag(p.A), np.diag(p.G)
    same_set([e.cov for e in got], diag_equilibria(aa, gg, which))
    for e in got:
        check_equilibrium(p, e, stable=True if which == "stable" else None)


cases_of(AREA, "result", {
    f"diag_{which}_scale_{s:g}": ([1.0, -0.5, 3.0], [2.0, 1.0, 0.25], s, which)
    for s in (1e-310, 1e-300, 1e-150, 1e150, 1e300) for which in ("stable", "all")
}, closed_form_case)

cases_of(AREA, "result", {
    "diag_all_mixed_signs_d4": ([2.0, -1.0, 0.5, -3.0], [1.0, -4.0, -1.0, 2.0], 1.0, "all"),
    "diag_all_indefinite_tiny": ([1.5, -0.75, 0.25], [-3.0, -1.0, 8.0], 2.0 ** -1000, "all"),
    "diag_stable_negative_g_none": ([1.0, -1.0], [-2.0, 1.0], 1.0, "stable"),
    "diag_stable_zero_g_unseen": ([1.0, -1.0], [0.0, 1.0], 1e200, "stable"),
}, closed_form_case)


def ratio_case(v: float) -> None:
    """A = I + diag(0, 1, 2)/4, G = 2vI: Σ* = diag(a_i / v), or a clean refusal when that
    overflows the float range (v = 1e-310)."""
    a = np.array([1.0, 1.25, 1.5])
    p = Params(A=np.diag(a), V=-v * np.eye(3), B=np.eye(3))
    (eq,) = equilibria(p)
    np.testing.assert_allclose(np.diag(eq.cov), a / v, rtol=1e-14)
    check_equilibrium(p, eq, stable=True)


cases_of(AREA, "result", {f"ratio_v_{v:g}": v for v in (1e-300, 1e300, 1e-150, 3e-308)},
         ratio_case)
cases_of(AREA, "error", {"ratio_v_overflows_1e-310": 1e-310, "ratio_v_overflows_5e-324": 5e-324},
         ratio_case)


# ---------------------------------------------------------------- scalar V, dense: residuals


def dense_layer(seed: int, d: int, spectrum, scale: float, heads: int = 1) -> Params:
    rng = np.random.default_rng(seed)
    X = np.eye(d) + 0.3 * rng.standard_normal((d, d)) / np.sqrt(d)
    A = scale * (X @ np.diag(spectrum) @ np.linalg.inv(X))
    pairs = []
    for _ in range(heads):
        Y = rng.standard_normal((d, d))
        pairs.append((-scale * rng.uniform(0.5, 2.0) * np.eye(d), Y @ Y.T / d + 0.1 * np.eye(d)))
    return Params(A=A, heads=pairs)


def dense_case(item) -> None:
    seed, d, spectrum, scale, heads, which = item
    p = dense_layer(seed, d, spectrum, scale, heads)
    got = equilibria(p, which=which)
    n_right = sum(1 for x in spectrum if x > 0)
    if which == "stable":
        (eq,) = got  # G ≻ 0: the stabilizing solution exists, of rank n_right
        assert eq.rank == n_right, f"rank {eq.rank}, A has {n_right} anti-stable eigenvalues"
    else:  # G ≻ 0: one covariance per invariant subspace of the anti-stable part, 2^n_right
        assert len(got) == 2 ** n_right, f"{len(got)} equilibria, expected {2 ** n_right}"
        assert sum(e.stable for e in got) == 1, "not exactly one stable equilibrium"
    for e in got:
        check_equilibrium(p, e, stable=True if which == "stable" else None)


cases_of(AREA, "result", {
    "dense_stable_d3_unit": (1, 3, [1.0, 0.5, -2.0], 1.0, 1, "stable"),
    "dense_stable_d3_tiny": (2, 3, [1.0, 0.5, -2.0], 1e-290, 1, "stable"),
    "dense_stable_d4_huge_two_heads": (3, 4, [2.0, 1.0, -1.0, -0.5], 1e280, 2, "stable"),
    "dense_all_d3_unit": (4, 3, [1.0, 0.3, -0.6], 1.0, 1, "all"),
    "dense_all_d3_small": (5, 3, [0.7, 2.0, -0.4], 1e-200, 2, "all"),
    "dense_stable_hurwitz_zero": (6, 3, [-1.0, -0.5, -2.0], 1e-100, 1, "stable"),
}, dense_case)


# ---------------------------------------------------------------- general V: Newton with starts


def general_layer() -> Params:
    V = np.array([[1.0, 0.3], [-0.2, 0.8]])
    return Params(A=np.array([[0.5, 0.2], [0.0, -1.0]]), V=-V, B=np.eye(2))


def starts_case(starts) -> None:
    p = general_layer()
    got = equilibria(p, which="all", starts=starts)
    assert got, "no equilibrium found (Σ = 0 always is one)"
    assert any(not np.any(e.cov) for e in got), "Σ = 0 missing"
    for e in got:
        check_equilibrium(p, e)


cases_of(AREA, "result", {
    "starts_list_of_lists": [[[1.0, 0.0], [0.0, 1.0]]],
    "starts_float32": [np.eye(2, dtype=np.float32) * 0.5],
    "starts_tuple_generator": tuple(np.eye(2) * s for s in (0.1, 10.0)),
    "starts_singular_psd": [np.array([[1.0, 1.0], [1.0, 1.0]])],
    "starts_huge": [1e150 * np.eye(2)],
}, starts_case)

cases_of(AREA, "error", {
    "starts_string_matrix": ["1 0; 0 1"],
    "starts_complex": [np.eye(2) * (1 + 1j)],
    "starts_bool": [np.eye(2, dtype=bool)],
    "starts_wrong_shape": [np.eye(3)],
    "starts_asymmetric": [np.array([[1.0, 0.5], [0.0, 1.0]])],
    "starts_indefinite": [np.diag([1.0, -1.0])],
    "starts_nan": [np.full((2, 2), np.nan)],
    "starts_bare_string": "abc",
    "starts_none": None,
    "starts_one_matrix_not_a_list": np.eye(2),
}, starts_case)


def newton_case(item) -> None:
    start, kwargs = item
    p = general_layer()
    got = newton(p, start, **kwargs)
    assert got is not None, "Newton did not converge from a start next to an equilibrium"
    S, _res, _it = got
    assert residual(p, S) <= ACCEPT, "Newton's answer has a residual above the accepted one"
    assert sym_eigs(S)[0] >= -1e-9 * float(np.abs(S).max()), "Newton's answer is not PSD"


cases_of(AREA, "error", {
    f"newton_maxiter_{label}": (np.eye(2), {"maxiter": value})
    for label, value in (("zero", 0), ("negative", -3), ("float", 2.5), ("string", "5"),
                         ("bool", True), ("none", None))
}, newton_case)
cases_of(AREA, "result", {"newton_maxiter_numpy_int": (0.5 * np.eye(2), {"maxiter": np.int64(40)})},
         newton_case)


# ---------------------------------------------------------------- tolerances and options


def option_case(call) -> None:
    call()


_P = diag_layer([1.0, -1.0], [2.0, 1.0])
_A, _G = np.diag([1.0, -2.0]), np.eye(2)
cases_of(AREA, "error", {
    **{f"equilibria_axis_rtol_{label}": (lambda v=v: equilibria(_P, axis_rtol=v))
       for label, v in (("negative", -1.0), ("zero", 0.0), ("one", 1.0), ("nan", np.nan),
                        ("string", "1e-8"), ("bool", True))},
    "equilibria_which_typo": lambda: equilibria(_P, which="stabel"),
    "bernoulli_axis_rtol_inf": lambda: bernoulli(_A, _G, axis_rtol=np.inf),
    "bernoulli_crosscheck_string": lambda: bernoulli(_A, _G, crosscheck="no"),
    "bernoulli_condition_int": lambda: bernoulli(_A, _G, condition=1),
    "care_scaling_string": lambda: care_g(_A, _G, scaling="False"),
    "care_axis_rtol_complex": lambda: care_g(_A, _G, axis_rtol=1e-8j),
    "schur_split_axis_rtol_list": lambda: schur_split(_A, _G, axis_rtol=[1e-8]),
    "lyapunov_Q_strings": lambda: lyapunov_function(-np.eye(2), [["1", "0"], ["0", "1"]]),
}, option_case)


def axis_case(item) -> None:
    """An eigenvalue of A at relative distance `gap` from iℝ, with axis_rtol `rtol`: refused when
    gap ≤ rtol, else the stabilizing solution, verified by its residual."""
    gap, rtol = item
    p = diag_layer([1.0, gap, -1.0], [1.0, 1.0, 1.0])
    got = equilibria(p, axis_rtol=rtol)
    assert abs(gap) > rtol * np.sqrt(2 + gap ** 2), "an eigenvalue within axis_rtol was accepted"
    (eq,) = got
    check_equilibrium(p, eq, stable=True)
    same_set([eq.cov], diag_equilibria(np.diag(p.A), np.diag(p.G), "stable"), rtol=1e-10)


cases_of(AREA, "error", {"axis_gap_inside_loose_rtol": (1e-3, 0.5),
                         "axis_gap_on_axis": (0.0, 1e-300)}, axis_case)
cases_of(AREA, "result", {"axis_gap_outside_tight_rtol": (1e-12, 1e-14),
                          "axis_gap_negative_small": (-1e-6, 1e-8)}, axis_case)


# ---------------------------------------------------------------- riccati solvers


def care_scalar_case(item) -> None:
    """a x·2 − g x² + q = 0, stabilizing root x = (a + √(a² + gq))/g (g > 0, q ≥ 0)."""
    a, g, q = item
    sol = care_g(np.array([[a]]), np.array([[g]]), np.array([[q]]))
    with mp.workdps(DPS):
        A, G, Q = (mp.mpf(x) for x in (a, g, q))
        x = (A + mp.sqrt(A * A + G * Q)) / G
        assert abs(sol.X[0, 0] - x) <= 1e-10 * abs(x), f"X = {sol.X[0, 0]!r}, root {x}"
    assert sol.residual <= 1e-12 and np.all(sol.closed_loop.real < 0)


cases_of(AREA, "result", {"care_scalar_unit": (1.0, 2.0, 3.0),
                          "care_scalar_stable_a": (-1e-3, 1.0, 1e-6),
                          "care_scalar_large": (1e100, 1e100, 1e100)}, care_scalar_case)


def bernoulli_case(item) -> None:
    """Dense Bernoulli at a magnitude: residual AΣ + ΣAᵀ − ΣGΣ in mpmath, rank, closed loop."""
    seed, alpha, beta = item
    p = dense_layer(seed, 3, [1.5, -0.5, 0.25], 1.0)
    A, G = alpha * p.A, beta * p.G
    sol = bernoulli(A, G)
    with mp.workdps(DPS):
        Am, Gm, Xm = mpm(A), mpm(G), mpm(sol.X)
        R = Am * Xm + Xm * Am.T - Xm * Gm * Xm
        scale = 2 * fro(Am * Xm) + fro(Xm * Gm * Xm)
        assert fro(R) <= 1e-10 * scale, f"residual {mp.nstr(fro(R) / scale, 3)}"
        cl = mp.eig(Am - Xm * Gm, left=False, right=False)
        assert max(mp.re(x) for x in cl) < 0, "A − ΣG is not Hurwitz"
    assert sol.rank == 2


cases_of(AREA, "result", {"bernoulli_alpha_tiny_beta_huge": (11, 1e-200, 1e100),
                          "bernoulli_alpha_huge_beta_tiny": (12, 1e100, 1e-200),
                          "bernoulli_both_subnormal_free": (13, 2.0 ** -1000, 2.0 ** -1010)},
         bernoulli_case)


def lyapunov_case(item) -> None:
    """LᵀP + PL = −Q: the reported residual is the true one (mpmath) and small; Hurwitz L
    (spectrum given) ⇒ P ≻ 0. A spectrum with λ_i + λ_j = 0 makes the equation singular up to
    the rounding of L: a refusal, or a P that solves the rounded data (its residual)."""
    seed, spectrum, scale = item
    rng = np.random.default_rng(seed)
    n = len(spectrum)
    X = np.eye(n) + 0.2 * rng.standard_normal((n, n))
    L = scale * (X @ np.diag(spectrum) @ np.linalg.inv(X))
    Y = rng.standard_normal((n, n))
    Q = Y @ Y.T + np.eye(n)
    sol = lyapunov_function(L, Q)
    with mp.workdps(DPS):
        Lm, Pm, Qm = mpm(L), mpm(sol.P), mpm(Q)
        R = Lm.T * Pm + Pm * Lm + Qm
        true = fro(R) / (2 * fro(Lm.T * Pm) + fro(Qm))
        assert true <= 1e-8 and true <= 2 * sol.residual + 1e-15, \
            f"residual {mp.nstr(true, 3)}, reported {sol.residual:.3g}"
        if max(spectrum) < 0:
            assert min(mp.eigsy(Pm, eigvals_only=True)) > 0, "P not positive definite"


cases_of(AREA, "result", {"lyapunov_d4": (21, [-1.0, -2.0, -0.1, -5.0], 1.0),
                          "lyapunov_stiff": (22, [-1e-4, -1e4, -1.0], 1.0)}, lyapunov_case)
cases_of(AREA, "either", {"lyapunov_eigen_sum_zero": (23, [1.0, -1.0, -2.0], 1.0)},
         lyapunov_case)


# ---------------------------------------------------------------- Certificate.linearization()


def linearization_case(item) -> None:
    """The StateSpace of a converging certificate: its covariance block has the spectrum of L
    (mpmath, written here), its mean block is K* = A + Σ_h V_h + Σ_h V_hΣ*B_h."""
    p, cov0 = item
    c = certify(p, cov0)
    sys = c.linearization()
    S = c.equilibrium.cov
    check_equilibrium(p, c.equilibrium)
    d = p.d
    K = p.A + sum(V for V, _ in p.heads) + sum(V @ S @ B for V, B in p.heads)
    np.testing.assert_allclose(sys.A[:d, :d], K, rtol=1e-12, atol=1e-12 * np.abs(K).max())
    block = np.linalg.eigvals(sys.A[d:, d:])
    with mp.workdps(DPS):
        top = abscissa(p, S)
    assert abs(block.real.max() - float(top)) <= 1e-8 * max(1.0, abs(float(top))), \
        "the covariance block's abscissa differs from L's"
    assert sys.B.shape == (d + d * (d + 1) // 2, d)


cases_of(AREA, "result", {
    "linearization_converges_d2": (diag_layer([1.0, -0.5], [2.0, 1.0]), np.eye(2)),
    "linearization_collapses_d2": (diag_layer([-1.0, -0.5], [2.0, 1.0]), np.eye(2)),
    "linearization_general_v": (general_layer(), 0.5 * np.eye(2)),
}, linearization_case)
cases_of(AREA, "error", {
    "linearization_blows_up": (diag_layer([1.0, -1.0], [-2.0, -1.0]), np.eye(2)),
}, linearization_case)


# ---------------------------------------------------------------- care_g: G must be B R⁻¹ Bᵀ


def _square(seed: int, n: int, scale: float = 1.0) -> np.ndarray:
    return scale * np.random.default_rng(seed).standard_normal((n, n))


cases_of(AREA, "error", {
    "care_g_square_B_as_G": lambda: care_g(_square(31, 3), _square(32, 3), np.eye(3)),
    "care_g_negative_definite_G": lambda: care_g(_square(33, 2), -np.eye(2), np.eye(2)),
    "care_g_indefinite_tiny_G": lambda: care_g(_square(34, 3), 1e-300 * np.diag([1.0, -1.0, 2.0]),
                                               np.eye(3)),
    "care_g_skew_G_huge": lambda: care_g(_square(35, 2), 1e300 * np.array([[0.0, 1.0],
                                                                         [-1.0, 0.0]])),
    "care_g_nonsymmetric_Q": lambda: care_g(_square(36, 4), np.eye(4), _square(37, 4)),
    "care_g_G_nan": lambda: care_g(np.eye(2), [[1.0, np.nan], [np.nan, 1.0]]),
    "care_g_G_wrong_shape": lambda: care_g(np.eye(3), np.eye(2)),
    "lyapunov_function_nonsymmetric_Q": lambda: lyapunov_function(-np.eye(3), _square(38, 3)),
}, option_case)


def care_g_reference_case(item) -> None:
    """care_g(A, BR⁻¹Bᵀ, Q) is scipy's solve_continuous_are(A, B, Q, R), checked by the CARE's
    residual in mpmath (60 digits) and the closed loop A − GX Hurwitz."""
    seed, n, m, scale = item
    rng = np.random.default_rng(seed)
    A = scale * rng.standard_normal((n, n))
    B = rng.standard_normal((n, m))
    Y = rng.standard_normal((m, m))
    R = (Y @ Y.T + np.eye(m)) / scale
    Q = scale * np.eye(n)
    G = B @ np.linalg.solve(R, B.T)
    G = 0.5 * (G + G.T)
    sol = care_g(A, G, Q)
    with mp.workdps(DPS):
        Am, Gm, Qm, Xm = mpm(A), mpm(G), mpm(Q), mpm(sol.X)
        res = Am.T * Xm + Xm * Am - Xm * Gm * Xm + Qm
        ref = fro(Qm) + 2 * fro(Am.T * Xm) + fro(Xm * Gm * Xm)
        assert fro(res) <= 1e-11 * ref, f"CARE residual {mp.nstr(fro(res) / ref, 3)}"
    assert np.max(np.linalg.eigvals(A - G @ sol.X).real) < 0, "A − GX is not Hurwitz"


cases_of(AREA, "result", {
    "care_g_reference_n4_m1": (41, 4, 1, 1.0),
    "care_g_reference_n6_m6_large": (42, 6, 6, 1e50),
    "care_g_reference_n5_m2_small": (43, 5, 2, 1e-40),
}, care_g_reference_case)


# ---------------------------------------------------------------- matrix-free Newton (d > 30)


def _low_rank_layer(d: int, heads: int, seed: int) -> Params:
    """V_h = −U_hU_hᵀ (rank d/heads), B_h = B₀ + W_hW_hᵀ/2 (benchmarks.equilibria)."""
    from benchmarks.equilibria import layer

    return layer(d, heads, d // heads, seed=seed)


def krylov_case(item) -> None:
    """newton beyond d = 30 with a Krylov budget: refused when the budget is not an integer ≥ 1
    or is spent (SolverError), else an equilibrium checked by its residual in mpmath."""
    d, heads, seed, budget = item
    p = _low_rank_layer(d, heads, seed)
    start = np.eye(d)
    got = newton(p, start, krylov_budget=budget)
    assert got is not None, "Newton did not converge from the identity"
    S = got[0]
    assert residual(p, S) <= ACCEPT, "residual above the accepted one"


cases_of(AREA, "error", {
    "newton_krylov_budget_zero": (32, 8, 1, 0),
    "newton_krylov_budget_float": (32, 8, 1, 3.0),
    "newton_krylov_budget_spent_d36": (36, 12, 2, 1),
    "newton_krylov_budget_spent_d40": (40, 4, 3, 4),
}, krylov_case)
cases_of(AREA, "result", {"newton_krylov_d32_8_heads": (32, 8, 4, 300)}, krylov_case)
