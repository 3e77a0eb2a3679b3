"""Numerical pieces of the exact scalar-V flow (riccati_tf.flows.exact): step rule, factors, node
exponentials, the collocation stage solver, and the d = 32 mean against Runge–Kutta."""

from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from scipy.linalg import expm, solve_continuous_lyapunov

from riccati_tf import Gaussian, Params, flow
from riccati_tf.errors import SolverError
from riccati_tf.flows import exact as ex
from riccati_tf.state.validation import psd_rank

from .cases import dop853_moments, random_cov, random_gaussian, scalar_v_params


def rel_err(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


def kappa(A, h):
    """‖e^{Ah}‖₂ ‖e^{−Ah}‖₂: the rounding amplification of a Van Loan step of length h."""
    return np.linalg.norm(expm(A * h), 2) * np.linalg.norm(expm(-A * h), 2)


@pytest.mark.parametrize("nonnormal", [0.0, 1.0, 5.0])
def test_step_length_bounds_the_conditioning_of_the_block_exponential(rng, nonnormal):
    d = 12
    A = rng.standard_normal((d, d)) / np.sqrt(d)
    A += nonnormal * np.triu(rng.standard_normal((d, d)), 1)
    h = ex.covariance.step_length(A)
    assert kappa(A, h) <= ex.covariance.STEP_KAPPA * (1 + 1e-12)
    assert kappa(A, 4 * h) > ex.covariance.STEP_KAPPA  # the bound is not vacuous


def test_step_length_is_unbounded_when_the_symmetric_part_is_scalar():
    K = np.array([[0.0, 2.0], [-2.0, 0.0]])
    assert ex.covariance.step_length(0.3 * np.eye(2) + K) == np.inf


@pytest.mark.parametrize("rank, noise", [(6, 0.0), (4, 0.0), (4, 1e-17), (6, 1e-9)])
def test_factor_reproduces_the_covariance_and_keeps_its_rank(rng, rank, noise):
    """L Lᵀ = Σ0 to rounding; the factor keeps at least the rank psd_rank sees (d·eps·λ_max) and
    at most d — directions below that threshold are kept when the floats as given have them."""
    cov = random_cov(rng, 6, rank) + noise * np.eye(6)
    L = ex.covariance._factor(cov)
    assert L.shape[0] == 6 and psd_rank(cov) <= L.shape[1] <= 6
    assert rel_err(L @ L.T, cov) < 1e-13


def _exact_rank(cov) -> int:
    """Rank of the floats as given, from exact rational pivots."""
    M = [[Fraction(float(x)) for x in row] for row in cov]
    n, rank = len(M), 0
    for k in range(n):
        piv = next((i for i in range(k, n) if M[i][k] != 0), None)
        if piv is None:
            continue
        M[k], M[piv] = M[piv], M[k]
        rank += 1
        for i in range(k + 1, n):
            f = M[i][k] / M[k][k]
            M[i] = [x - f * y for x, y in zip(M[i], M[k], strict=True)]
    return rank


@pytest.mark.parametrize("cov, rank", [
    (np.diag([1.0, 1e-16]), 2),                         # representable tiny variance
    (np.diag([1.0, 1e-300, 0.0]), 2),                   # tiny and exactly zero
    (np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 1e-20]]), 2),
    (np.array([[1.0, 1e-9], [1e-9, 1.0000001e-16]]), 2),  # determined: 1e-23 ≫ its rounding
    (np.outer([0.5, 1.0], [0.5, 1.0]), 1),              # exactly singular as floats
    (np.outer([0.6, 0.8], [0.6, 0.8]), 1),              # singular up to the rounding of uuᵀ
])
def test_factor_keeps_every_direction_the_data_determine(cov, rank):
    """psd_factor's d·eps·λ_max truncation dropped Σ0 = diag(1, 1e-16)'s second direction (the
    exact flow then gave Σ22(5) = 0 where Σ blows up at 3.845). A pivot is dropped only at the
    level of the rounding of its own cancellation (the float uuᵀ for u = (0.6, 0.8) has
    determinant 5.3e-17, the residue of rounding the products); the factor reproduces Σ0 entry
    by entry relative to √(Σ_ii Σ_jj)."""
    L = ex.covariance._factor(cov)
    assert L.shape[1] == rank
    if rank == cov.shape[0] or np.any(np.diag(cov) == 0):
        assert _exact_rank(cov) == rank
    for i in range(cov.shape[0]):
        for j in range(cov.shape[0]):
            scale = np.sqrt(cov[i, i] * cov[j, j])
            assert abs((L @ L.T)[i, j] - cov[i, j]) <= 16 * np.finfo(float).eps * scale


def test_factor_keeps_the_stratum_of_a_computed_covariance(rng):
    """A rank-r covariance computed in floats (X Xᵀ) keeps rank r: its other pivots are rounding
    of the cancellation, and reviving them would let a flow restarted from its own output leave
    the stratum (SPEC §3)."""
    for d, r in [(6, 3), (12, 5), (20, 7)]:
        cov = random_cov(rng, d, r)
        L = ex.covariance._factor(cov)
        assert L.shape[1] == r and rel_err(L @ L.T, cov) < 1e-13


#: the stage counts of the mean's embedded pairs
STAGES = sorted({s for _, lo, hi in ex.mean.MEAN_PAIRS for s in (lo, hi)})


@pytest.mark.parametrize("s", STAGES)
def test_gauss_tableau_satisfies_its_order_conditions_to_rounding(s):
    c, w, a = ex.gauss.gauss_tableau(s)
    assert max(np.abs(a @ c ** (k - 1) - c**k / k).max() for k in range(1, s + 1)) < 1e-15
    assert max(abs(w @ c ** (k - 1) - 1 / k) for k in range(1, 2 * s + 1)) < 1e-15


@pytest.mark.parametrize("A", [1e150 * np.eye(2), np.array([[0.0, 1e6], [-1e6, 0.0]]),
                               np.array([[1e150, 1.0], [0.0, -1e150]]), 0.5 * np.eye(3)])
def test_step_rule_bounds_growth_and_rotation(A):
    """e^{±Ah} stays within STEP_KAPPA of 1 in norm and ‖A‖h ≤ STEP_NORM, however large A is."""
    h, kappa = ex.covariance._step_rule(A)
    assert np.isfinite(h) and h > 0 and kappa <= ex.covariance.STEP_KAPPA * (1 + 1e-12)
    assert np.linalg.norm(A) * h <= ex.covariance.STEP_NORM * (1 + 1e-12)
    sym = np.linalg.eigvalsh(0.5 * (A + A.T))
    assert np.abs(sym).max() * h <= np.log(ex.covariance.STEP_KAPPA) * (1 + 1e-12)


@pytest.mark.parametrize("s", [6, 16])
@pytest.mark.parametrize("h", [0.05, 0.7, 2.0])
def test_mirrored_nodes_match_direct_block_exponentials(rng, h, s):
    d = 6
    A = rng.standard_normal((d, d)) / np.sqrt(d)
    C = rng.standard_normal((d, d))
    G = C + C.T
    prop = ex.covariance._Propagator(A, G)
    E, W = prop.nodes(s, h)
    E_ref, W_ref = ex.van_loan(A, G, np.append(ex.gauss.gauss_tableau(s)[0] * h, h))
    assert rel_err(E, E_ref) < 1e-13
    assert rel_err(W, W_ref) < 1e-13


@pytest.mark.parametrize("h", [0.01, 0.4])
@pytest.mark.parametrize("scale", [0.1, 1.0, 4.0])
@pytest.mark.parametrize("d", [5, 16])
def test_stage_solver_matches_the_dense_collocation_system(rng, scale, h, d, monkeypatch):
    """Above DIRECT_STAGE_SIZE unknowns the sweeps (Picard while it contracts fast, as for
    h = 0.01, then decoupled simplified Newton) converge to the collocation solution, also from
    a close guess; with no sweeps allowed, the dense (s d)×(s d) fallback gives the same stages;
    small systems are solved directly (no sweep), to the same stages."""
    s = 8 if d == 5 else 16
    c, _, a = ex.gauss.gauss_tableau(s)
    size = np.sqrt(5 / d)  # ‖K‖₂ as at d = 5
    base = size * rng.standard_normal((d, d))
    K = np.stack([base + scale * cj * size * rng.standard_normal((d, d)) for cj in c])
    m, b = rng.standard_normal(d), rng.standard_normal(d)
    calls = []
    monkeypatch.setattr(ex.mean, "inv", lambda M: calls.append(1) or np.linalg.inv(M))
    direct = s * d <= ex.mean.DIRECT_STAGE_SIZE
    Z = ex.mean._stages(K, m, b, h)
    assert bool(calls) == (h == 0.4 and not direct)  # Newton only where Picard contracts slowly
    system = np.eye(s * d) - h * np.kron(a, np.eye(d)) @ np.block(
        [[K[i] if i == j else np.zeros((d, d)) for j in range(s)] for i in range(s)])
    rhs = h * np.kron(a, np.eye(d)) @ ((K @ m) + b).reshape(-1)
    Z_ref = np.linalg.solve(system, rhs).reshape(s, d)
    assert rel_err(Z, Z_ref) < 1e-13
    assert rel_err(ex.mean._stages(K, m, b, h, Z_ref * (1 + 1e-9)), Z_ref) < 1e-13  # from a guess
    monkeypatch.setattr(ex.mean, "NEWTON_ITERATIONS", 0)
    assert rel_err(ex.mean._stages(K, m, b, h), Z_ref) < 1e-13


@pytest.mark.parametrize("nonnormal", [0.0, 3.0])
def test_shared_frozen_jacobian_solves_both_stage_counts_like_the_inverses(rng, nonnormal):
    """One eigendecomposition of K̄ gives the corrections (I − hλ_k K̄)⁻¹R_k of both Gauss
    methods of a pair, solving (I − h a ⊗ K̄) x = R as accurately as the per-λ inverses (to
    cond(T)·eps, T the eigenvectors of the Gauss matrix a); the s_lo system swept with the s_hi
    system's K̄ reaches the dense collocation solution to rounding."""
    d, h = 12, 0.6
    base = rng.standard_normal((d, d)) / np.sqrt(d) + nonnormal * np.triu(
        rng.standard_normal((d, d)), 1) / np.sqrt(d)
    shared = ex.mean._FrozenJacobian(shared=True)
    for s in (14, 16):
        K = np.stack([base + 0.3 * cj * rng.standard_normal((d, d)) / np.sqrt(d)
                      for cj in ex.gauss.gauss_tableau(s)[0]])
        R = rng.standard_normal((s, d))
        correction = shared.correction(K, h, s)(R)
        assert shared._eigen is not None
        a, K_bar = ex.gauss.gauss_tableau(s)[2], shared.K_bar
        exact_x = np.linalg.solve(np.eye(s * d) - h * np.kron(a, K_bar), R.reshape(-1))
        per_lambda = ex.mean._FrozenJacobian().correction(np.broadcast_to(K_bar, K.shape), h, s)(R)
        tol = 8 * np.linalg.cond(np.linalg.eig(a)[1]) * np.finfo(float).eps
        assert rel_err(per_lambda, exact_x.reshape(s, d)) < tol
        assert rel_err(correction, exact_x.reshape(s, d)) < tol
        m, b = rng.standard_normal(d), rng.standard_normal(d)
        system = np.eye(s * d) - h * np.kron(a, np.eye(d)) @ np.block(
            [[K[i] if i == j else np.zeros((d, d)) for j in range(s)] for i in range(s)])
        Z_ref = np.linalg.solve(system, h * np.kron(a, np.eye(d)) @ ((K @ m) + b).reshape(-1))
        guess = Z_ref.reshape(s, d) * (1 + 1e-6)
        assert rel_err(ex.mean._stages(K, m, b, h, guess, shared), Z_ref.reshape(s, d)) < 1e-13


def test_frozen_jacobian_inverts_per_eigenvalue_when_k_bar_is_nearly_defective():
    """A Jordan block has no eigenvector basis (‖Q‖‖Q⁻¹‖ ≫ EIGEN_KAPPA): the corrections come
    from one inverse per λ_k, which solve the Newton system to rounding."""
    d, s, h = 6, 8, 0.5
    K_bar = np.eye(d) + np.diag(np.ones(d - 1), 1)
    frozen = ex.mean._FrozenJacobian(shared=True)
    R = np.arange(s * d, dtype=float).reshape(s, d)
    correction = frozen.correction(np.broadcast_to(K_bar, (s, d, d)), h, s)(R)
    assert frozen._eigen is None
    a = ex.gauss.gauss_tableau(s)[2]
    expected = np.linalg.solve(np.eye(s * d) - h * np.kron(a, K_bar), R.reshape(-1))
    assert rel_err(correction, expected.reshape(s, d)) < 1e-11


@pytest.mark.parametrize("scale", [1e-310, 1e-300, 1e-150, 1.0, 1e150, 1e300])
@pytest.mark.parametrize("kind", ["random", "rank_one", "diagonal", "nonnormal"])
def test_norm2_is_the_largest_singular_value_at_every_scale(rng, scale, kind):
    """`_norm2` (top eigenvalue of the scaled Gram matrix) is the SVD's σ_max to a few eps
    relative, from the subnormal edge to the overflow edge, for d = 1, 8, 33; 0 for a zero
    matrix; inf for non-finite entries."""
    for d in (1, 8, 33):
        if kind == "random":
            M = rng.standard_normal((d, d))
        elif kind == "rank_one":
            M = np.outer(rng.standard_normal(d), rng.standard_normal(d))
        elif kind == "diagonal":
            M = np.diag(rng.uniform(0.5, 1.5, d))
        else:
            M = np.triu(rng.standard_normal((d, d))) * 1e3 - np.eye(d)
        M = M / np.abs(M).max() * scale
        ref = float(np.linalg.svd(M, compute_uv=False)[0])
        assert ex.covariance._norm2(M) == pytest.approx(ref, rel=8 * d * np.finfo(float).eps)
    assert ex.covariance._norm2(np.zeros((3, 3))) == 0.0
    for bad in (np.nan, np.inf):
        M = np.eye(3)
        M[1, 2] = bad
        assert ex.covariance._norm2(M) == np.inf


@pytest.mark.parametrize("s", STAGES)
def test_gauss_eigen_pairs_conjugates(s):
    """The half spectrum reconstructs the Gauss matrix: a x = 2 Re Σ_{k<s/2} T_k λ_k (T⁻¹x)_k for
    real x, so a = Re(2T_half diag(λ_half) T⁻¹_half)."""
    lam, T2, Tinv = ex.gauss.gauss_eigen(s)
    a = ex.gauss.gauss_tableau(s)[2]
    assert lam.shape == (s // 2,) and np.all(lam.imag > 0)
    full = np.linalg.eigvals(a)
    assert np.abs(np.sort_complex(np.concatenate([lam, lam.conj()])) - np.sort_complex(full)
                  ).max() < 1e-12
    # T grows ill-conditioned with s (cond ≈ 3e8 at s = 16): the decomposition only decouples
    # the simplified Newton sweeps, whose residual is exact
    cond = np.linalg.cond(np.concatenate([T2, T2.conj()], axis=1))
    assert rel_err(((T2 * lam) @ Tinv).real, a) < 64 * np.finfo(float).eps * cond


def _mp_van_loan(A, G, t, dps=40):
    """(E, W) at offset t from the Van Loan block exponential in dps digits."""
    d = A.shape[0]
    with mp.workdps(dps):
        F = mp.expm(mp.matrix(np.block([[-A.T, G], [np.zeros((d, d)), A]]).tolist()) * mp.mpf(t))
        E, W = F[d:, d:], F[d:, d:].T * F[:d, d:]
        return np.array(E.tolist(), dtype=float), np.array(W.tolist(), dtype=float)


CHAIN_CASES = {
    "general": lambda rng, d: (rng.standard_normal((d, d)) * 2 / np.sqrt(d), 1.0),
    "skew (rotation)": lambda rng, d: ((lambda X: 3 * (X - X.T) / np.sqrt(d))(
        rng.standard_normal((d, d))), 1.0),
    "non-normal": lambda rng, d: (np.triu(rng.standard_normal((d, d))) * 2, 1.0),
    "A = 0": lambda rng, d: (np.zeros((d, d)), 1.0),
    "‖G‖ ≫ ‖A‖ (G scaled by γ)": lambda rng, d: (rng.standard_normal((d, d)) / np.sqrt(d), 1e6),
}


@pytest.mark.parametrize("case", CHAIN_CASES)
@pytest.mark.parametrize("s", [4, 10, 16])
def test_node_exponentials_from_the_taylor_chain_match_high_precision(case, s):
    """The mean's node data (E, W, E⁻¹ at the Gauss offsets c_i h, i ≤ s/2) walked from one set
    of Taylor terms (`_Propagator._chain`) agree with the Van Loan block exponential in 40
    digits to a few eps relative, like scipy's expm at each node; E⁻¹ is E's inverse."""
    rng = np.random.default_rng(s)
    d = 5
    A, scale = CHAIN_CASES[case](rng, d)
    X = rng.standard_normal((d, d))
    G = scale * (X + X.T)
    h = 2.5
    offsets = ex.gauss.gauss_tableau(s)[0][: s // 2] * h
    E, W, Einv = ex.covariance._Propagator(A, G)._chain(offsets)
    E_sp, W_sp, _ = ex.covariance._van_loan_blocks(A, G, offsets)
    for i, t in enumerate(offsets):
        E_mp, W_mp = _mp_van_loan(A, G, t)
        tol_E = 64 * np.finfo(float).eps * max(1.0, rel_err(E_sp[i], E_mp) / 1e-16)
        assert rel_err(E[i], E_mp) < tol_E
        assert rel_err(W[i], W_mp) < 64 * np.finfo(float).eps * max(
            1.0, rel_err(W_sp[i], W_mp) / 1e-16)
        assert rel_err(Einv[i] @ E[i], np.eye(d)) < 1e-13


@pytest.mark.parametrize("a, g, h", [(1e-310, 1e10, 0.7), (1e-300, 1.0, 0.7),
                                     (1e-200, 1e200, 0.7), (0.0, 1e300, 0.7), (1e-20, 1e-20, 0.7),
                                     (1e150, 1.0, 1e-150), (1e-150, 1e150, 1e100)])
def test_node_exponentials_at_extreme_scales_of_A_and_G(a, g, h):
    """‖G‖/‖A‖ beyond the float range (1e10/1e-310), ‖G‖_F whose square overflows (1e200,
    1e300), ‖A‖ = 1e150 over h = 1e-150 (powers of A overflow): the chain's scaling, norms and
    Taylor terms are formed without overflow and its nodes agree with one block exponential
    per node."""
    A = a * np.array([[1.0, 2, 0], [0, -1, 1], [0.5, 0, 0.3]])
    G = g * np.diag([1.0, 2.0, 3.0])
    offsets = ex.gauss.gauss_tableau(8)[0][:4] * h
    with np.errstate(over="raise", invalid="raise", divide="raise", under="ignore"):
        E, W, _ = ex.covariance._Propagator(A, G)._chain(offsets)
    E_sp, W_sp, _ = ex.covariance._van_loan_blocks(A, G, offsets)
    assert rel_err(E, E_sp) < 1e-14 and rel_err(W, W_sp) < 1e-14


def test_node_exponentials_fall_back_to_one_exponential_per_node_beyond_chain_points(
        monkeypatch):
    """An offset that would need more than CHAIN_POINTS Taylor increments (‖A‖h large) comes
    from the block exponential itself: the same numbers as `_van_loan_blocks`."""
    rng = np.random.default_rng(3)
    A = 40 * rng.standard_normal((4, 4))
    G = np.eye(4)
    offsets = np.array([0.1, 0.5, 1.0])
    prop = ex.covariance._Propagator(A, G)
    monkeypatch.setattr(ex.covariance, "_van_loan_blocks", lambda *a: ("blocks",))
    assert prop._chain(offsets) == ("blocks",)
    monkeypatch.undo()
    E, W, _ = prop._chain(offsets[:1] / 400)  # 2 increments: the chain
    E_sp, W_sp, _ = ex.covariance._van_loan_blocks(A, G, offsets[:1] / 400)
    assert rel_err(E, E_sp) < 1e-14 and rel_err(W, W_sp) < 1e-14


@pytest.mark.parametrize("seed", range(3))
def test_mean_and_covariance_at_d32_match_tight_rk(seed):
    """The benchmark's size: d = 32, T = 5, with mean and bias; rk at rtol 1e-13 is an
    independent reference (‖A‖₂ T ≈ 10, several covariance steps and mean sub-steps)."""
    rng = np.random.default_rng(seed)
    d = 32
    p = scalar_v_params(rng, d, v=-0.5)
    X = rng.standard_normal((d, d))
    g = Gaussian(rng.standard_normal(d), X @ X.T / d)
    exact = flow(p, g, 5.0, method="exact", t_eval=[0.0, 2.5, 5.0])
    rk = flow(p, g, 5.0, method="rk", t_eval=[0.0, 2.5, 5.0], rtol=1e-13, atol=1e-15)
    assert exact.status == rk.status
    k = min(len(exact), len(rk))
    assert rel_err(exact.cov[:k], rk.cov[:k]) < 1e-11
    assert rel_err(exact.mean[:k], rk.mean[:k]) < 1e-11


# ------------------------------------------------------------- error control of the mean


def dop853_mean(p: Params, g: Gaussian, times) -> np.ndarray:
    """m at the sorted times from DOP853 at rtol 1e-13 (`cases.dop853_moments`)."""
    return dop853_moments(p, g, times, rtol=1e-13, atol=1e-16)[0]


def sweep_layer(a: float, v: float, s: float) -> tuple[Params, Gaussian]:
    """A d = 3 layer of a flow sweep: A = A0 + aI, V = vI, Σ0 = sI + C, with a bias."""
    A0 = np.array([[0.0, 0.3, 0.0], [-0.3, -0.2, 0.1], [0.0, 0.0, -0.4]])
    B = np.array([[1.0, 0.2, 0.0], [0.2, 0.6, 0.1], [0.0, 0.1, 0.8]])
    C = np.array([[0.0, 0.1, 0.0], [0.1, 0.0, 0.0], [0.0, 0.0, 0.0]])
    p = Params(A=A0 + a * np.eye(3), B=B, V=v * np.eye(3), b=np.array([0.2, -0.1, 0.0]))
    return p, Gaussian(np.array([0.5, 0.0, 0.1]), s * np.eye(3) + C)


@pytest.mark.parametrize("a, v, s, T", [
    (-0.26023157348782466, 0.45422348796383627, 3.114303831765842, 0.33),  # T* ≈ 0.46
    (-0.007786728529749043, 0.09158796504591349, 1.856926252129638, 3.0),
    (-0.8806110525598843, 0.9414692579115818, 0.33374851945438827, 3.0),
])
def test_mean_does_not_depend_on_the_output_times(a, v, s, T):
    """One covariance step per output interval: with output times [0, T] the collocation
    sub-steps are long, ‖K‖₂h ≤ MEAN_THETA at both ends, yet K(t) = A_v + Σ(t)B̄ varies fast
    inside (poles of (I + W(t)Σ0)⁻¹ near the real axis). Sizing by ‖K‖h alone left the mean
    off by 1.3e-7, 5.3e-8 and 6.6e-9 relative here; the error control keeps it at DOP853's
    level whatever the output grid."""
    p, g = sweep_layer(a, v, s)
    two = flow(p, g, T, method="exact", t_eval=[0.0, T])
    grid = flow(p, g, T, method="exact")
    ref = dop853_mean(p, g, np.array([0.0, T]))[-1]
    assert two.status == grid.status == "completed"
    assert rel_err(two.mean[-1], ref) <= 1e-11
    assert rel_err(grid.mean[-1], ref) <= 1e-11
    assert rel_err(two.mean[-1], grid.mean[-1]) <= 1e-12


def test_mean_on_a_random_output_grid_matches_dop853():
    """The d = 3 layer of test_trajectory's exact dense-output test (seed 2), its flow asked
    at 9 random times: the mean was 1.1e-10 off DOP853 (rtol 1e-12)."""
    rng = np.random.default_rng(2)
    d = 3
    C = rng.standard_normal((d, d))
    p = Params(A=rng.standard_normal((d, d)) / np.sqrt(d), B=C @ C.T / d + np.eye(d),
               V=-0.5 * np.eye(d), b=rng.standard_normal(d))
    g = random_gaussian(rng, d)
    T = 0.8
    t = np.sort(rng.uniform(0.0, T, 9))
    tr = flow(p, g, T, method="exact", t_eval=t)
    assert rel_err(tr.mean, dop853_mean(p, g, t)) <= 1e-11
    assert rel_err(tr.mean[-1], flow(p, g, t[-1], method="exact").mean[-1]) <= 1e-12


def scalar_mean(a, v, beta, s0, m0, b, t, split=None) -> float:
    """m(t) for d = 1 in 40 digits: σ = σ0e^{2at}/u, u = 1 − (vβσ0/a)(e^{2at} − 1) (σ̇ = 2aσ +
    2vβσ²), and ṁ = (a + v + vβσ)m + b has the fundamental solution φ = e^{(a+v)t}/√u, so
    m = φ(t)(m0 + b∫_0^t ds/φ(s)) (the quadrature split at `split`, a fast transition, if
    inside)."""
    with mp.workdps(40):
        a, v, beta, s0, m0, b, t = (mp.mpf(x) for x in (a, v, beta, s0, m0, b, t))

        def phi(s):
            return mp.exp((a + v) * s) / mp.sqrt(1 - (v * beta * s0 / a) * mp.expm1(2 * a * s))

        points = [0, t] if split is None or not 0 < split < t else [0, mp.mpf(split), t]
        return float(phi(t) * (m0 + b * mp.quad(lambda s: 1 / phi(s), points)))


@pytest.mark.parametrize("a, v, beta, s0, m0, b", [
    (0.2, 1.0, 1.0, 1.0, 0.7, 0.0),
    (0.2, 1.0, 1.0, 1.0, 0.7, 0.3),
    (-0.5, 2.0, 0.7, 0.4, -1.2, 0.5),
    (1.5, -0.3, -2.0, 2.0, 0.3, -1.0),
])
def test_mean_near_a_blowup_matches_the_closed_form(a, v, beta, s0, m0, b):
    """t_final = T*(1 − 1e-6): K ~ 1/(T* − t) and the poles of K sit just beyond T*. The
    mean was 1.1e-7 off; it is now within 1e-9 of the 40-digit closed form (the covariance's
    own rounding, which moves T* by about eps·T* per step, bounds what is possible)."""
    T_star = np.log1p(a / (v * beta * s0)) / (2 * a)
    T = T_star * (1 - 1e-6)
    p = Params(A=[[a]], V=[[v]], B=[[beta]], b=[b])
    tr = flow(p, Gaussian([m0], [[s0]]), T, method="exact", t_eval=[0.0, T])
    assert tr.status == "completed"
    ref = scalar_mean(a, v, beta, s0, m0, b, T)
    assert abs(tr.mean[-1, 0] / ref - 1) <= 1e-9


@pytest.mark.parametrize("a, s0", [(20.0, 1e-8), (80.0, 1e-8), (300.0, 1e-3)])
def test_mean_across_a_fast_covariance_transition_matches_the_closed_form(a, s0):
    """d = 1 with G > 0 and a ≫ σ0: σ rises from σ0 to σ∞ = a in a logistic transition of width
    1/(2a) at t_c = ln(a/σ0 − 1)/(2a) (the poles of K = a + v + vβσ lie at t_c ± iπ/(2a)), so
    that K swings from a − 1 to −1 within sub-steps whose ‖K‖h stays moderate. Only the error
    estimate sees this: an estimate that samples K at the kept step's nodes alone (its lower
    step collocated on their interpolant) accepted steps off by up to 1e-10 here: end states
    1.4e-12 to 3.4e-10 from the closed form. The embedded pair with its own nodes gives
    2.4e-15 to 1.3e-13 at T = 2.5 t_c, asserted within 1e-12 of the 40-digit closed form, and
    up to 6.2e-13 at 9 outputs (the rounding of the covariance steps that end there, amplified
    by the mean's growth e^{(a−1)t}), asserted within 5e-12."""
    v, beta, m0, b = -1.0, 1.0, 0.7, 0.3
    t_c = np.log(a / s0 - 1) / (2 * a)
    T = 2.5 * t_c
    p = Params(A=[[a]], V=[[v]], B=[[beta]], b=[b])
    t_out = np.linspace(0.0, T, 9)
    for t_eval, tol in ((t_out, 5e-12), ([0.0, T], 1e-12)):
        tr = flow(p, Gaussian([m0], [[s0]]), T, method="exact", t_eval=t_eval)
        for t, mean in zip(tr.t, tr.mean[:, 0], strict=True):
            ref = scalar_mean(a, v, beta, s0, m0, b, t, t_c)
            assert abs(mean / ref - 1) <= tol, (t, mean, ref)


def test_mean_error_control_halves_where_the_single_step_is_inaccurate(rng):
    """One controlled sub-step over a step whose end is close to a blow-up: it refines (more
    than MEAN_STEP_COST collocation steps) and agrees with a run of many short uncontrolled
    steps; where K is constant it accepts at once, with either pair."""
    a, v, beta, s0 = 0.2, 1.0, 1.0, 1.0
    T_star = np.log1p(a / (v * beta * s0)) / (2 * a)
    A, G = np.array([[a]]), np.array([[-2 * v * beta]])
    prop = ex.covariance._Propagator(A, G)
    law = ex.mean._mean_law(A, v, np.array([[v * beta]]), np.array([0.3]), np.array([0.7]))
    L, m, h = np.array([[np.sqrt(s0)]]), np.array([0.7]), 0.95 * T_star
    x = law.norm_K(L, h) * h
    got, _, steps, _ = ex.mean._controlled(prop, L, m, h, law, x, 0, None, 0.0)
    assert steps > ex.mean.MEAN_STEP_COST
    n = 4096
    fine, Lf = m, L
    for _ in range(n):
        fine, Lf, _ = ex.mean._mean_step(prop, Lf, fine, h / n, law, 8)
    assert rel_err(got, fine) <= 1e-12
    flat = ex.mean._mean_law(A, v, np.zeros((1, 1)), np.array([0.3]), np.array([0.7]))
    still = ex.covariance._Propagator(A, np.zeros((1, 1)))  # G = 0, B̄ = 0: K = a + v
    for x in (flat.norm_K(L, 0.5) * 0.5, ex.mean.MEAN_THETA):
        steps = ex.mean._controlled(still, L, m, 0.5, flat, x, 0, None, 0.0)[2]
        assert steps == ex.mean.MEAN_STEP_COST


@pytest.mark.parametrize("a, v, beta, s0, m0, b", [
    (0.2, 1.0, 1.0, 1.0, 0.7, 0.3),
    (1.5, -0.3, -2.0, 2.0, 0.3, -1.0),
])
def test_dense_means_near_a_blowup_match_the_closed_form(a, v, beta, s0, m0, b):
    """The 101 default output times up to T*(1 − 1e-6): the mean crosses many outputs per
    span (`_dense_pays`), its sub-steps halve where K ~ 1/(T* − t) grows, and the means at
    the outputs inside them come from the collocation polynomials. Every tenth output up to
    0.9 T is within 1e-12 of the 40-digit closed form; the last within 1e-8, the rounding of
    its 100 covariance steps (about eps·T* each) amplified by T*/(T* − T) = 1e6."""
    T_star = np.log1p(a / (v * beta * s0)) / (2 * a)
    T = T_star * (1 - 1e-6)
    p = Params(A=[[a]], V=[[v]], B=[[beta]], b=[b])
    tr = flow(p, Gaussian([m0], [[s0]]), T, method="exact")
    assert tr.status == "completed" and len(tr) == 101
    for k in range(10, 101, 10):
        ref = scalar_mean(a, v, beta, s0, m0, b, tr.t[k])
        assert abs(tr.mean[k, 0] / ref - 1) <= (1e-12 if k < 100 else 1e-8)


@pytest.mark.parametrize("t_eval", [[0.0, 0.45, 0.5], [0.0, 0.1, 0.2, 0.3, 0.4, 0.45, 0.5],
                                    list(np.linspace(0.0, 0.5, 51))])
def test_means_up_to_a_blowup_match_the_closed_form(monkeypatch, t_eval):
    """d = 1 with T* ≈ 0.456 < t_final = 0.5: the mean is advanced past the outputs up to the
    step where the blow-up is found, one of them at that step's start (span by span where the
    outputs are sparse, through them where they are dense), never over a zero span; every
    returned mean matches the 40-digit closed form."""
    a, v, beta, s0, m0, b = 0.2, 1.0, 1.0, 1.0, 0.7, 0.3
    spans = []
    mean_over = ex.mean._mean_over

    def recording(prop, L, m, H, *args, **kw):
        spans.append(H)
        return mean_over(prop, L, m, H, *args, **kw)
    monkeypatch.setattr(ex.flow, "_mean_over", recording)
    p = Params(A=[[a]], V=[[v]], B=[[beta]], b=[b])
    tr = flow(p, Gaussian([m0], [[s0]]), 0.5, method="exact", t_eval=t_eval)
    assert tr.status == "blowup" and min(spans) > 0
    for t, mean in zip(tr.t[1:], tr.mean[1:, 0], strict=True):
        assert abs(mean / scalar_mean(a, v, beta, s0, m0, b, t) - 1) <= 1e-10


@pytest.mark.parametrize("seed", range(2))
def test_dense_means_at_d32_match_tight_rk_at_every_output(seed):
    """d = 32, T = 5, a converging layer (V = −I/2, B ⪰ 0), the 101 default output times
    (spans of many outputs, their means from the collocation polynomials of DENSE_PAIRS):
    every output within 1e-11 of rk at rtol 1e-13, and within 1e-12 of the end states of
    flows asked for that output time alone."""
    rng = np.random.default_rng(seed)
    d = 32
    A, C, X = (rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3))
    p = Params(A=A, B=C @ C.T, V=-0.5 * np.eye(d), b=rng.standard_normal(d))  # converging
    g = Gaussian(rng.standard_normal(d), X @ X.T)
    exact = flow(p, g, 5.0, method="exact")
    rk = flow(p, g, 5.0, method="rk", rtol=1e-13, atol=1e-15)
    assert exact.status == rk.status == "completed"
    assert rel_err(exact.mean, rk.mean) < 1e-11
    for k in (7, 33, 50, 77):
        alone = flow(p, g, float(exact.t[k]), method="exact", t_eval=[0.0, exact.t[k]])
        assert rel_err(exact.mean[k], alone.mean[-1]) <= 1e-12


def test_controlled_means_inside_are_the_kept_collocation_polynomial(rng):
    """`_controlled` with output offsets: accepted at once, the means inside are the s_hi
    step's collocation polynomial (`_lagrange`) and an offset h is the step's end; refined
    near a blow-up, the means at offsets in both halves (one on the halving point) agree with
    many short uncontrolled steps."""
    a, v, beta, s0 = 0.2, 1.0, 1.0, 1.0
    A, G = np.array([[a]]), np.array([[-2 * v * beta]])
    prop = ex.covariance._Propagator(A, G)
    law = ex.mean._mean_law(A, v, np.array([[v * beta]]), np.array([0.3]), np.array([0.7]))
    L, m = np.array([[np.sqrt(s0)]]), np.array([0.7])
    h = 0.05
    taus = np.array([0.01, 0.025, 0.04, h])
    x = law.norm_K(L, h) * h
    m2, _, steps, inner = ex.mean._controlled(prop, L, m, h, law, x, 0, None, 0.0, taus)
    assert steps == ex.mean.MEAN_STEP_COST
    hi = ex.mean._pair(x, ex.mean.DENSE_PAIRS)[1]
    _, _, Z = ex.mean._mean_step(prop, L, m, h, law, hi)
    np.testing.assert_allclose(inner[:3], m + ex.mean._lagrange(hi, taus[:3] / h) @ Z, rtol=1e-14)
    np.testing.assert_array_equal(inner[3], m2)
    T_star = np.log1p(a / (v * beta * s0)) / (2 * a)
    h = 0.95 * T_star
    taus = np.array([0.2, 0.5, 0.8, 0.95]) * T_star  # 0.5 h: the halving point (rounded)
    x = law.norm_K(L, h) * h
    got, _, steps, inner = ex.mean._controlled(prop, L, m, h, law, x, 0, None, 0.0, taus)
    assert steps > ex.mean.MEAN_STEP_COST and inner.shape == (4, 1)
    n = 4096
    fine, Lf, at = m, L, {}
    for k in range(n):
        fine, Lf, _ = ex.mean._mean_step(prop, Lf, fine, h / n, law, 8)
        at[k + 1] = fine
    for tau, mean in zip(taus, inner, strict=True):
        k = round(tau / h * n)
        if abs(k - tau / h * n) < 1e-9:  # offsets on the fine grid
            assert rel_err(mean, at[k]) <= 1e-11
    assert rel_err(got, fine) <= 1e-12


@pytest.mark.parametrize("s", [4, 8, 16, 20])
def test_lagrange_basis_is_the_product_form_and_exact_on_the_nodes(rng, s):
    """`_lagrange` (barycentric) equals the product form of the Lagrange basis on 0, c_1..c_s
    to rounding, reproduces polynomials of degree s, and gives unit rows on the nodes."""
    x = np.append(0.0, ex.gauss.gauss_tableau(s)[0])
    theta = np.concatenate([rng.uniform(0.0, 1.0, 20), [1.0], x])
    P = ex.mean._lagrange(s, theta)
    full = np.empty((theta.size, x.size))
    for j in range(x.size):
        others = np.delete(x, j)
        full[:, j] = np.prod((theta[:, None] - others) / (x[j] - others), axis=1)
    np.testing.assert_allclose(P, full[:, 1:], rtol=0, atol=1e-13 * np.abs(full).max())
    coef = rng.standard_normal(s + 1)
    poly = np.polynomial.polynomial.polyval(theta, coef)
    at_nodes = np.polynomial.polynomial.polyval(x, coef)
    np.testing.assert_allclose(at_nodes[0] + P @ (at_nodes[1:] - at_nodes[0]), poly, atol=1e-11)
    np.testing.assert_array_equal(P[-s:], np.eye(s))
    assert not P[-s - 1].any()  # θ = 0


def test_dense_spans_only_where_outputs_are_dense():
    """`_dense_pays`: one span with 49 outputs inside (the default grid, ‖K‖h ≈ 5) takes
    fewer collocation nodes than 50 spans; a span with its midpoint inside does not, nor one
    whose ‖K‖₂ is not finite."""
    inside = np.linspace(0.0, 2.5, 51)[1:-1]
    assert ex.mean._dense_pays(2.0, 2.5, inside)
    assert not ex.mean._dense_pays(2.0, 2.5, np.array([1.25]))
    assert not ex.mean._dense_pays(np.inf, 2.5, inside)
    assert not ex.mean._dense_pays(np.nan, 2.5, inside)


@pytest.mark.parametrize("t_eval", [None, [0.0, 1.0]])
def test_a_mean_drift_out_of_range_is_refused_by_name(t_eval):
    """K = A + v̄I + ΣB̄ overflows at t = 0 (B = 1e300 I, Σ0 = 1e10 I): SolverError naming the
    mean's drift, on the default output grid as with the end state alone."""
    p = Params(A=-np.eye(2), B=1e300 * np.eye(2), V=-0.5 * np.eye(2), b=[1.0, 0.0])
    with pytest.raises(SolverError, match="drift K = A"):
        flow(p, Gaussian([1.0, 0.0], 1e10 * np.eye(2)), 1.0, method="exact", t_eval=t_eval)


# --------------------------------------------------------------------------- long horizons


def _run(p, g, t_final, t_eval=None, **kw):
    vs = p.value_scalars
    Bbar = sum(v * B for v, (_, B) in zip(vs, p.heads, strict=True))
    t_out = np.array([0.0, t_final] if t_eval is None else t_eval, dtype=float)
    return ex.exact_flow(p.A, p.G, sum(vs), Bbar, p.b, g.mean, g.cov, t_out, t_final, **kw)


@pytest.mark.parametrize("t_final", [800.0, 1e12])
def test_settles_at_the_stable_equilibrium_over_long_horizons(rng, t_final):
    """A anti-stable, G ≻ 0: Σ → Σ* = P*⁻¹ (AᵀP* + P*A = G, SPEC §5) and m → −K∞⁻¹b; a handful
    of steps, then the equilibrium (Newton-corrected) for the rest of the horizon."""
    d = 4
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    A = Q @ np.diag(rng.uniform(0.3, 1.5, d)) @ Q.T
    C = rng.standard_normal((d, d))
    p = Params(A=A, B=(C @ C.T / d + np.eye(d)) / 2, V=-np.eye(d), b=rng.standard_normal(d))
    g = Gaussian(rng.standard_normal(d), random_cov(rng, d))
    res = _run(p, g, t_final)
    assert res.settled_by == "equilibrium" and res.settled_time < 200 and res.n_steps < 2000
    star = np.linalg.inv(solve_continuous_lyapunov(A.T, p.G))
    assert rel_err(res.cov[-1], star) < 1e-12
    K = A - np.eye(d) - star @ p.B
    assert rel_err(res.mean[-1], -np.linalg.solve(K, p.b)) < 1e-11


def test_collapse_regime_jumps_with_one_exponential(rng):
    """A Hurwitz, G ⪰ 0: the closed form with W(s) = W∞ − E_sᵀW∞E_s reaches t = 1e12 (Σ = 0
    exactly there) and agrees with stepping at moderate times."""
    A = np.array([[-0.5, 2.0], [0.0, -0.3]])
    p = Params(A=A, B=np.array([[1.0, 0.2], [0.2, 0.5]]), V=-np.eye(2))
    g = Gaussian(np.zeros(2), np.array([[1.0, 0.3], [0.3, 0.5]]))
    res = _run(p, g, 1e12, t_eval=[0.0, 20.0, 1e12])
    assert res.settled_by == "collapse" and res.settled_time <= 20 and res.n_steps < 10
    stepped = _run(p, g, 20.0, t_eval=[0.0, 20.0])
    assert rel_err(res.cov[1], stepped.cov[-1]) < 1e-12
    assert np.all(res.cov[-1] == 0)


def test_settling_follows_a_tiny_variance_until_it_settles():
    """Σ0 = diag(1, 1e-300), A = diag(−1, 1), G = 2I: one step maps Σ to itself to rounding in
    norm long before Σ22 grows to its equilibrium 1 near t ≈ 345; the entrywise gate and the
    full-space stability test must not freeze it."""
    p = Params(A=np.diag([-1.0, 1.0]), B=np.eye(2), V=-np.eye(2))
    res = _run(p, Gaussian(np.zeros(2), np.diag([1.0, 1e-300])), 800.0, t_eval=[0.0, 340.0, 800.0])
    s = 1e-300 * np.exp(680.0)  # σ(t) = σ0 e^{2t}/(1 + σ0(e^{2t} − 1)) at t = 340
    assert abs(res.cov[1, 1, 1] - s / (1 + s)) < 1e-12
    assert abs(res.cov[-1, 1, 1] - 1.0) < 1e-14 and res.settled_time > 340


def test_budget_is_spent_with_a_solver_error_and_refused_up_front_when_hopeless():
    p = Params(A=np.array([[0.0, 1.0], [-1.0, 0.1]]), B=np.eye(2), V=-np.eye(2))
    g = Gaussian(np.array([1.0, 0.0]), np.eye(2))
    with pytest.raises(SolverError, match="max_steps = 20"):
        _run(p, g, 500.0, max_steps=20)
    rot = Params(A=np.array([[0.0, 1.0], [-1.0, 0.0]]), B=np.eye(2), V=-np.eye(2))
    with pytest.raises(SolverError, match="max_steps"):  # eigenvalues ±i: never settles
        _run(rot, g, 1e12)


def test_blowup_time_is_located_relative_to_the_root_itself():
    """Σ0 = 1e150 S: T* ≈ 1/(|g|σ) ~ 4e-151, to 4 eps relative (xtol was 4 eps·H)."""
    S = np.array([[1.0, 0.3], [0.3, 0.5]])
    p = Params(A=0.5 * np.eye(2), B=np.eye(2), V=np.eye(2))
    res = _run(p, Gaussian(np.zeros(2), 1e150 * S), 2.0)
    lam = np.linalg.eigvalsh(1e150 * S)[-1]
    T = np.log1p(1.0 / (2 * lam)) / 1.0  # σ̇ = σ + 2σ²: T* = ln(1 + 1/(2σ0))
    assert abs(res.blowup_time - T) <= 1e-13 * T


@pytest.mark.parametrize("seed", range(3))
def test_rounding_level_g_is_bracketed_not_guessed(seed):
    """G = Q diag(1, −1e-15) Qᵀ in floats: the float data decide the blow-up at rounding level;
    the exact flow answers only when G ∓ δI agree, else SolverError (never brentq's ValueError)."""
    Q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((2, 2)))
    G = Q @ np.diag([1.0, -1e-15]) @ Q.T
    p = Params(A=Q @ np.diag([1.0, 2.0]) @ Q.T, B=-(G + G.T) / 2, V=0.5 * np.eye(2))
    g = Gaussian(np.zeros(2), np.eye(2))
    with pytest.raises(SolverError):
        _run(p, g, 40.0)
    assert _run(p, g, 5.0).blowup_time is None  # decided: no G within rounding blows up by 5


def test_mean_cancellation_is_refused_not_guessed():
    """A = 1e150 I, V = −I, B = I: K∞ = A − I − Σ* cancels 1e150 against 1e150; the covariance
    settles, the mean cannot be vouched for."""
    p = Params(A=1e150 * np.eye(2), B=np.eye(2), V=-np.eye(2))
    with pytest.raises(SolverError, match="mean"):
        _run(p, Gaussian(np.array([1.0, 0.0]), np.eye(2)), 1.0)
    res = _run(p, Gaussian(np.zeros(2), np.eye(2)), 1.0)  # centred: Σ* = 1e150 I
    assert rel_err(res.cov[-1], 1e150 * np.eye(2)) < 1e-14


def test_end_state_too_close_to_a_blowup_is_refused():
    a, s0 = 0.5, 0.3  # σ̇ = σ + 2σ²: T* = ln(1 + 1/(2σ0))
    T = np.log1p(1 / (2 * s0))
    p, g = Params(A=a, B=1.0, V=1.0), Gaussian([0.0], [[s0]])
    with pytest.raises(SolverError, match="blow-up"):
        _run(p, g, T * (1 - 1e-12))
    res = _run(p, g, T * (1 - 1e-6))
    assert res.blowup_time is None


def _near_degenerate(seed, d, g_small, t_final=60.0, negative=0.0):
    """A = Q diag(a) Qᵀ anti-stable and G = Q diag(g, g_small) Qᵀ sharing its eigenvectors, so
    that (A, G) is nearly unobservable along the last one: Σ grows there to about 2a/g_small
    (or, with `negative` = −|g| < 0 on another direction, blows up), and the float G's rounding
    (eps‖G‖, against g_small) decides Σ along it. Returns (Params, Gaussian)."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    g = rng.uniform(0.5, 2.0, d - 1)
    if negative:
        g[0] = negative
    G = Q @ np.diag(np.r_[g, g_small]) @ Q.T
    low, high = (0.8, 1.6) if negative else (0.2, 1.0)
    A = Q @ np.diag(rng.uniform(low, high, d)) @ Q.T
    return (Params(A=A, B=0.5 * (G + G.T), V=-0.5 * np.eye(d)),
            Gaussian(np.zeros(d), random_cov(rng, d) + 0.1 * np.eye(d)))


def mp_closed_form(p, cov0, t, dps=120):
    """Σ(t) = e^{At}Σ0(I + W(t)Σ0)⁻¹e^{Aᵀt} in dps digits on the floats of p.A, p.G and Σ0
    (W(t) from the Van Loan block exponential in mpmath)."""
    d = p.d
    with mp.workdps(dps):
        block = mp.matrix(np.block([[-p.A.T, p.G], [np.zeros((d, d)), p.A]]).tolist())
        F = mp.expm(block * mp.mpf(t))
        E, W = F[d:, d:], F[d:, d:].T * F[:d, d:]
        S0 = mp.matrix(cov0.tolist())
        S = E * S0 * mp.inverse(mp.eye(d) + W * S0) * E.T
        return np.array(S.tolist(), dtype=float)


@pytest.mark.parametrize("seed, d, g_small", [
    (1, 2, 1e-6), (2, 3, 1e-7), (3, 4, 1e-8), (4, 2, 1e-9), (5, 3, 1e-10), (6, 4, 1e-12),
    (7, 2, 1e-12), (8, 3, 1e-14)])
def test_end_state_on_near_degenerate_g_is_accurate_or_refused(seed, d, g_small):
    """At t = 60 Σ has grown to ~2a/g_small along the direction where G nearly vanishes; the
    rounding of G there moves Σ(60) by about eps‖G‖/g_small relative (it was returned 2.8e-6 …
    0.2 off with status "completed"). Against the closed form in 120 digits on the package's
    own float G: the returned state is within its error estimate and 1e-6, or SolverError."""
    p, g = _near_degenerate(seed, d, g_small)
    try:
        tr = flow(p, g, 60.0, t_eval=[0.0, 60.0], method="exact")
    except SolverError as exc:
        assert g_small <= 1e-8 and "determined by the data" in str(exc)
        return
    ref = mp_closed_form(p, g.cov, 60.0)
    res = _run(p, g, 60.0)
    error = np.linalg.norm(tr.cov[-1] - ref) / np.linalg.norm(ref)
    assert np.linalg.norm(ref, 2) > 0.1 / g_small  # the ill-conditioned regime is reached
    assert error <= min(max(res.error_estimate, 1e-12), 1e-6)


@pytest.mark.parametrize("g_small", [1e-10, 1e-12, 1e-14])
def test_a_state_determined_only_to_1e_minus_4_is_refused(g_small):
    """The quoted magnitudes: Σ(60) is fixed by the float data only to ≥ 1e-5 relative here
    (G ∓ 8·d·eps·‖G‖ move it that far), and the closed form in 120 digits differs from what the
    flow would return by more than 1e-6: SolverError, never "completed"."""
    p, g = _near_degenerate(11, 3, g_small)
    with pytest.raises(SolverError, match="determined by the data"):
        flow(p, g, 60.0, method="exact")


@pytest.mark.parametrize("seed", range(6))
def test_end_state_at_095_tstar_on_near_degenerate_g(seed):
    """A blow-up driven by a small negative eigenvalue of G while G's smallest |eigenvalue| is
    ±1e-14: at 0.95 T* the state is within 1e-6 of the 120-digit closed form, or SolverError."""
    rng = np.random.default_rng(100 + seed)
    d = 2 + seed % 3
    p, g = _near_degenerate(100 + seed, d, (-1) ** seed * 1e-14,
                            negative=-10 ** rng.uniform(-8, -5))
    try:
        T = flow(p, g, 60.0, t_eval=[0.0, 60.0], method="exact").blowup_time
        assert T is not None
        tr = flow(p, g, 0.95 * T, t_eval=[0.0, 0.95 * T], method="exact")
    except SolverError:
        return
    ref = mp_closed_form(p, g.cov, 0.95 * T)
    assert tr.status == "completed"
    assert np.linalg.norm(tr.cov[-1] - ref) / np.linalg.norm(ref) <= 1e-6


def test_states_within_rounding_reach_of_the_blowup_are_not_returned():
    """σ̇ = 4σ + 2σ² from σ0 = 0.1 blows up at T* = ln(21)/4; flow's default grid on [0, 2T*]
    has a point 1 ulp before T* (σ ≈ 4.6e15 there, fixed by the data to no digit: it was
    returned). Every state returned is within 1e-6 of the closed form in 50 digits, and none
    lies within rounding reach of T*."""
    p, g = Params(A=2.0, B=-1.0, V=-1.0), Gaussian([0.0], [[0.1]])
    T = np.log(21.0) / 4
    tr = flow(p, g, 2 * T, method="exact")
    assert tr.status == "blowup" and abs(tr.blowup_time - T) <= 1e-14 * T
    with mp.workdps(50):
        for t, S in zip(tr.t, tr.cov[:, 0, 0], strict=True):
            e = mp.exp(4 * mp.mpf(float(t)))
            sigma = mp.mpf("0.1") * e / (1 - mp.mpf("0.05") * (e - 1))
            assert abs(S / sigma - 1) <= 1e-6
    assert T - tr.t[-1] > 1e-9 * T


# ----------------------------------------------- the mean at rtol 1e-13 (embedded pairs)


def mean_layer(kind: str, d: int, seed: int) -> tuple[Params, Gaussian, float]:
    """A random scalar-V layer with a mean and bias, and its horizon: "converging" (V = −I/2,
    B ⪰ 0: G ⪰ 0 and Σ settles), "growing" (A + I/2: Σ and the mean grow), "near blow-up"
    (V = I/2, B ⪰ 0: G ⪯ 0, horizon 0.95 T*), "rank-deficient" (Σ0 of rank 2)."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((d, d)) / np.sqrt(d)
    C = rng.standard_normal((d, d)) / np.sqrt(d)
    B = C @ C.T / d + 0.1 * np.eye(d)
    v = 0.5 if kind == "near blow-up" else -0.5
    if kind == "growing":
        A = A + 0.5 * np.eye(d)
    p = Params(A=A, B=B, V=v * np.eye(d), b=rng.standard_normal(d))
    g = Gaussian(rng.standard_normal(d), random_cov(rng, d, 2 if kind == "rank-deficient" else d))
    T = 4.0
    if kind == "near blow-up":
        T_star = flow(p, g, 50.0, method="exact", t_eval=[0.0, 50.0]).blowup_time
        assert T_star is not None
        T = 0.95 * T_star
    return p, g, T


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("kind", ["converging", "growing", "near blow-up", "rank-deficient"])
@pytest.mark.parametrize("d", [4, 12])
def test_mean_matches_a_tight_reference_at_rtol_1e13(kind, d, seed):
    """The mean at 9 output times against DOP853 at rtol 2.3e-14 (the tightest scipy takes),
    an independent reference: within 1e-13 of its largest entry (the flow reaches 1.3e-14 on
    these layers, DOP853 at rtol 1e-13 up to 4.8e-14). Keeping every sub-step of the pairs
    unchecked (MEAN_RTOL = 1e-3) leaves the near blow-up layers off by up to 1.5e-11."""
    p, g, T = mean_layer(kind, d, seed)
    t = np.linspace(0.0, T, 9)
    tr = flow(p, g, T, method="exact", t_eval=t)
    assert tr.status == "completed"
    ref = dop853_moments(p, g, t, rtol=2.3e-14, atol=1e-300)[0]
    assert rel_err(tr.mean, ref) <= 1e-13


@pytest.mark.parametrize("kind", ["converging", "growing", "near blow-up", "rank-deficient"])
def test_mean_at_a_time_does_not_depend_on_the_other_output_times(kind):
    """m(T) and m(T/3) from these two output times alone, among 101 more, and among 15 random
    ones (the covariance steps, hence the sub-steps, differ): equal to ~1e-13 relative."""
    p, g, T = mean_layer(kind, 8, 7)
    rng = np.random.default_rng(3)
    runs = [np.array([0.0, T / 3, T]), np.union1d(np.linspace(0.0, T, 101), [T / 3]),
            np.sort(np.concatenate([[T / 3, T], rng.uniform(0.0, T, 15)]))]
    means = []
    for t in runs:
        tr = flow(p, g, T, method="exact", t_eval=t)
        assert tr.status == "completed"
        means.append(np.stack([tr.mean[np.flatnonzero(t == s)[0]] for s in (T / 3, T)]))
    for other in means[1:]:
        assert rel_err(other, means[0]) <= 1e-13
