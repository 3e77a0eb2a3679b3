"""Exact steering between Gaussians (SPEC §4): constructive routes, particles, shooting, refusal."""

from dataclasses import replace

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.linalg import expm, polar
from scipy.stats import chi2

from riccati_tf import ControlPlan, Gaussian, Params, steer
from riccati_tf.errors import InvalidInputError, RankMismatchError, SolverError, UnreachableError
from riccati_tf.reachability.steering import direct_rotation, phase_bias, terminal_error, transport

TOL = 1e-8


def random_gaussian(rng, d, r, mean_scale=1.0):
    L = rng.standard_normal((d, r)) / np.sqrt(max(r, 1))
    return Gaussian(mean_scale * rng.standard_normal(d), L @ L.T)


def raw_rhs(p: Params, m, S):
    """ṁ = (A + V)m + VΣBm + b, Σ̇ = AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ written out (one head)."""
    A, B, V, b = p.A, p.B, p.V, p.b
    dm = (A + V) @ m + V @ S @ B @ m + b
    dS = A @ S + S @ A.T + V @ S @ B @ S + S @ B.T @ S @ V.T
    return dm, dS


def radau_endpoint(plan: ControlPlan):
    """The plan integrated by scipy's Radau (implicit, order 5) on raw_rhs, piece by piece with
    each piece's own parameters (params_at inside a piece)."""
    d = plan.start.d
    y = np.concatenate([plan.start.mean, plan.start.cov.ravel()])
    for piece in plan.pieces:
        def rhs(t, y, piece=piece):
            dm, dS = raw_rhs(piece.params(t), y[:d], y[d:].reshape(d, d))
            return np.concatenate([dm, dS.ravel()])

        sol = solve_ivp(rhs, (piece.t0, piece.t1), y, method="Radau", rtol=1e-12, atol=1e-14)
        assert sol.success
        y = sol.y[:, -1]
    return y[:d], y[d:].reshape(d, d)


def relative_error(mean, cov, plan):
    scale = max(np.hypot(np.linalg.norm(plan.target.mean), np.linalg.norm(plan.target.cov)),
                np.hypot(np.linalg.norm(plan.start.mean), np.linalg.norm(plan.start.cov)))
    return np.hypot(np.linalg.norm(mean - plan.target.mean),
                    np.linalg.norm(cov - plan.target.cov)) / scale


@pytest.mark.parametrize("controls", ["affine", "attention"])
@pytest.mark.parametrize("d", [1, 2, 3, *(pytest.param(d, marks=pytest.mark.long)
                                          for d in (4, 5, 6))])
def test_random_pairs_are_steered_exactly(controls, d):
    """Must-show 1: every rank r = 0..d; verify() (DOP853 via flow) and an independent Radau
    integration of the written-out ODE both land within 1e-8 of the target (d = 4, 5 and 6,
    from 7 s to half a minute of CPU time each with attention, in make test-long)."""
    rng = np.random.default_rng(100 + d)
    for r in range(d + 1):
        start, target = random_gaussian(rng, d, r), random_gaussian(rng, d, r)
        plan = steer(start, target, 1.0, controls=controls)
        assert plan.success and plan.residual <= TOL  # residual = plan.verify() at creation
        mean, cov = radau_endpoint(plan)
        assert relative_error(mean, cov, plan) <= TOL
        assert np.linalg.matrix_rank(cov, tol=1e-9 * max(np.abs(cov).max(), 1e-300)) == r


def test_transport_is_the_polar_decomposition_with_small_rotation(rng):
    for d, r in [(3, 3), (4, 2), (5, 1), (2, 1)]:
        g0, g1 = random_gaussian(rng, d, r), random_gaussian(rng, d, r)
        tr = transport(g0.cov, g1.cov, r)
        Phi = tr.Phi
        assert np.linalg.norm(Phi @ g0.cov @ Phi.T - g1.cov) <= 1e-12 * np.linalg.norm(g1.cov)
        assert np.linalg.det(Phi) > 0
        Q, P = polar(Phi)  # Φ = Q P (scipy: right polar decomposition)
        np.testing.assert_allclose(Q, expm(tr.log_Q), atol=1e-10)
        np.testing.assert_allclose(P, expm(tr.log_P), atol=1e-10)
        assert np.allclose(tr.log_Q, -tr.log_Q.T) and np.allclose(tr.log_P, tr.log_P.T)
        angles = np.abs(np.linalg.eigvals(tr.log_Q).imag)
        assert angles.max() <= np.pi / 2 + 1e-12  # the real log never meets an eigenvalue −1
        K = tr.log()
        np.testing.assert_allclose(expm(K), Phi, atol=1e-10)


def test_direct_rotation_turns_one_range_onto_the_other(rng):
    d, r = 5, 2
    U0 = np.linalg.qr(rng.standard_normal((d, r)))[0]
    U1 = np.linalg.qr(rng.standard_normal((d, r)))[0]
    R = expm(direct_rotation(U0, U1))
    np.testing.assert_allclose((np.eye(d) - U1 @ U1.T) @ R @ U0, 0, atol=1e-13)
    # orthogonal ranges (principal angle π/2): still a real rotation by π/2
    e = np.eye(2)
    R = expm(direct_rotation(e[:, [0]], e[:, [1]]))
    np.testing.assert_allclose(np.abs(R @ e[:, 0]), e[:, 1], atol=1e-15)


def test_phase_bias_handles_singular_generators():
    A = np.array([[0.0, 1.0], [0.0, 0.0]])  # nilpotent: A⁻¹ does not exist
    m0, m1 = np.array([1.0, -1.0]), np.array([0.5, 2.0])
    b = phase_bias(A, 0.7, m0, m1)
    sol = solve_ivp(lambda t, m: A @ m + b, (0, 0.7), m0, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(sol.y[:, -1], m1, atol=1e-10)


def test_affine_plan_structure(rng):
    start, target = random_gaussian(rng, 3, 2), random_gaussian(rng, 3, 2)
    plan = steer(start, target, 2.0, controls="affine")
    assert plan.route == "polar" and len(plan.pieces) == 2
    np.testing.assert_allclose(plan.breakpoints, [0.0, 1.0, 2.0])
    for t in (0.0, 0.3, 1.0, 1.7, 2.0):
        p = plan.params_at(t)
        assert not np.any(p.B) and not np.any(p.V)
    # right-continuous at the breakpoint, constant inside pieces
    assert plan.params_at(1.0) is plan.pieces[1].layer
    assert plan.params_at(0.999) is plan.pieces[0].layer
    with pytest.raises(InvalidInputError, match=r"\[0, t_final\]"):
        plan.params_at(2.5)


def test_attention_plan_uses_only_query_key_and_bias(rng):
    """A = 0, V constant, and along the integrated path V Σ B Σ = K Σ with B = Σ⁺/s."""
    d, r = 3, 2
    start, target = random_gaussian(rng, d, r), random_gaussian(rng, d, r)
    plan = steer(start, target, 1.0, controls="attention", temperature=2.0)
    assert plan.route == "attention" and plan.success
    traj = plan.integrate(points_per_piece=7)
    piece = plan.pieces[0]
    V = plan.params_at(0.0).V
    for t, S in zip(traj.t, traj.cov, strict=True):
        p = plan.params_at(t)
        assert not np.any(p.A)
        np.testing.assert_array_equal(p.V, V)
        np.testing.assert_allclose(p.B, np.linalg.pinv(S, rcond=1e-10) / 2.0,
                                   rtol=1e-6, atol=1e-6 * np.abs(p.B).max())
        np.testing.assert_allclose(V @ S @ p.B @ S, piece.K @ S, atol=1e-8)


def test_attention_with_a_held_feed_forward_drift(rng):
    """A frozen A (drift) is compensated: V = s(K − A), every rank."""
    A = np.array([[0.5, -1.0], [1.0, 0.25]])
    for r in (0, 1, 2):
        start, target = random_gaussian(rng, 2, r), random_gaussian(rng, 2, r)
        plan = steer(start, target, 1.0, controls="attention", fixed={"A": A})
        assert plan.route == "attention" and plan.residual <= TOL
        np.testing.assert_array_equal(plan.params_at(0.5).A, A)
        mean, cov = radau_endpoint(plan)
        assert relative_error(mean, cov, plan) <= TOL


def test_attention_with_an_imposed_value_matrix(rng):
    d = 3
    start, target = random_gaussian(rng, d, d), random_gaussian(rng, d, d)
    V = np.eye(d) + 0.3 * rng.standard_normal((d, d))
    plan = steer(start, target, 1.0, controls="attention", fixed={"V": V})
    assert plan.success and plan.residual <= TOL
    for t in (0.0, 0.4, 0.8):
        np.testing.assert_array_equal(plan.params_at(t).V, V)
    mean, cov = radau_endpoint(plan)
    assert relative_error(mean, cov, plan) <= TOL


def test_unequal_ranks_are_refused_with_the_invariant(rng):
    with pytest.raises(RankMismatchError, match="invariant under every control"):
        steer(random_gaussian(rng, 3, 2), random_gaussian(rng, 3, 3), 1.0)


def test_bad_input_is_refused(rng):
    g = random_gaussian(rng, 2, 2)
    with pytest.raises(InvalidInputError, match="t_final must be positive"):
        steer(g, g, 0.0)
    with pytest.raises(InvalidInputError, match="R\\^2 but target in R\\^3"):
        steer(g, random_gaussian(rng, 3, 3), 1.0)
    with pytest.raises(InvalidInputError, match="controls must be one of"):
        steer(g, g, 1.0, controls="magic")
    with pytest.raises(InvalidInputError, match=r"start must be a riccati_tf\.Gaussian"):
        steer((g.mean, g.cov), g, 1.0)


def test_hostile_arguments_are_refused_by_name(rng):
    g = random_gaussian(rng, 2, 2)
    for kwargs, field in [({"fixed": 5}, "fixed"), ({"fixed": "A"}, "fixed"),
                          ({"fixed": {"Q": np.eye(2)}}, "unknown parameter 'Q'.*A, V"),
                          ({"temperature": np.inf}, "temperature"),
                          ({"check_accessibility": "no"}, "check_accessibility")]:
        with pytest.raises(InvalidInputError, match=field):
            steer(g, g, 1.0, controls="attention", **kwargs)
    with pytest.raises(InvalidInputError, match="t_final must be ≤"):
        steer(Gaussian([0.0], [[0.0]]), Gaussian([0.0], [[0.0]]), 1.797e308)
    with pytest.raises(InvalidInputError, match="n_pieces must be ≤"):
        steer(g, g, 1.0, controls="values", n_pieces=10**6)
    with pytest.raises(RankMismatchError, match="rank Σ0 = 2 but rank Σ1 = 1"):
        steer(Gaussian(np.zeros(2), 1e-300 * np.eye(2)),
              Gaussian(np.zeros(2), 1e-300 * np.diag([1.0, 0.0])), 1.0)


@pytest.mark.parametrize("scale0, scale1", [(1.0, 1e-315), (1e-300, 1e300), (1e290, 8e307)])
def test_extreme_scales_are_steered_and_verified(scale0, scale1):
    """Covariances from the subnormal range to near 1.8e308: the plan is exact in closed form
    (Σ(T) = (E2 E1) Σ0 (E2 E1)ᵀ, products rescaled by powers of two) and verify() is relative to
    the target, not hidden under the start's scale."""
    C = np.array([[2.0, 1.0], [1.0, 1.0]])
    start, target = Gaussian(np.zeros(2), scale0 * np.eye(2)), Gaussian(np.zeros(2), scale1 * C)
    plan = steer(start, target, 1.0)
    assert plan.success and plan.residual <= TOL
    F, k = np.eye(2), 0
    for piece in plan.pieces:
        F = expm(piece.layer.A * (piece.t1 - piece.t0)) @ F
        e = np.frexp(np.abs(F).max())[1]
        F, k = np.ldexp(F, -e), k + e
    e = np.frexp(scale1)[1]
    G = np.ldexp(F, k - e // 2)
    image = G @ start.cov @ G.T
    reference = np.ldexp(target.cov, -2 * (e // 2))
    assert np.linalg.norm(image - reference) <= 1e-8 * np.linalg.norm(reference)
    wrong = replace(plan, target=Gaussian(np.zeros(2), 0.5 * scale1 * C))
    assert wrong.verify() == pytest.approx(1.0, rel=1e-6)


def test_transport_between_rank_deficient_covariances_of_any_size():
    """Rank 1 in R^2 from 1e-280 to 1e-310 (subnormal entries): Φ1 Σ0 Φ1ᵀ = Σ1 to rounding."""
    u, v = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    cov0, cov1 = 1e-280 * np.outer(u, u), 1e-310 * np.outer(v, v)
    tr = transport(cov0, cov1, 1)
    assert tr.residual <= 1e-12
    plan = steer(Gaussian(np.zeros(2), cov0), Gaussian(np.zeros(2), cov1), 2.0)
    assert plan.success and plan.residual <= TOL


def test_ill_conditioned_means_are_refused_not_missed(rng):
    """A covariance expanding by 1e106 while the mean sits 1e45 standard deviations out: the
    bias would have to cancel e^{Aτ}m0 beyond float64 precision, so steer refuses."""
    L = rng.standard_normal((3, 3))
    start = Gaussian(1e26 * rng.standard_normal(3), 1e-37 * L @ L.T)
    target = Gaussian(1e26 * rng.standard_normal(3), 1e69 * L @ L.T)
    with pytest.raises(SolverError, match="mean cannot be steered"):
        steer(start, target, 1e31)


def test_terminal_error_is_relative_and_scale_free(rng):
    g0, g1 = random_gaussian(rng, 2, 2), random_gaussian(rng, 2, 2)
    err = terminal_error(g1.mean, 1.01 * g1.cov, g0, g1)
    assert err == pytest.approx(0.01, rel=1e-9)
    for k in (-500, 500):
        s0 = Gaussian(np.ldexp(g0.mean, k), np.ldexp(g0.cov, 2 * k))
        s1 = Gaussian(np.ldexp(g1.mean, k), np.ldexp(g1.cov, 2 * k))
        assert terminal_error(s1.mean, np.ldexp(1.01 * g1.cov, 2 * k), s0, s1) == \
            pytest.approx(err, rel=1e-12)


# --------------------------------------------------------------------------- particles

START = Gaussian([0.3, -0.2], [[1.0, 0.3], [0.3, 0.6]])
TARGET = Gaussian([-0.4, 0.5], [[0.5, -0.2], [-0.2, 1.2]])
#: χ² quantile for the Monte-Carlo test (5 degrees of freedom: 2 means, 3 covariances)
QUANTILE = 1 - 1e-3
LOWER = np.tril_indices(2)


def moments_vector(mean, cov):
    return np.concatenate([mean, cov[LOWER]])


def sampling_covariance(g: Gaussian, n: int) -> np.ndarray:
    """Covariance of (m̂, vech Ŝ) for n i.i.d. samples of g: Σ/n and the Wishart
    Cov(Ŝ_ij, Ŝ_kl) = (Σ_ik Σ_jl + Σ_il Σ_jk)/(n − 1); m̂ and Ŝ are independent."""
    S, k = g.cov, len(LOWER[0])
    C = np.zeros((2 + k, 2 + k))
    C[:2, :2] = S / n
    for a, (i, j) in enumerate(zip(*LOWER, strict=True)):
        for c, (k_, l_) in enumerate(zip(*LOWER, strict=True)):
            C[2 + a, 2 + c] = (S[i, k_] * S[j, l_] + S[i, l_] * S[j, k_]) / (n - 1)
    return C


def plan_image(plan: ControlPlan, z) -> np.ndarray:
    """The plan's mean-field endpoint (m(T), vech Σ(T)) from the start z = (m0, vech Σ0)."""
    S = np.zeros((2, 2))
    S[LOWER] = z[2:]
    S = S + np.tril(S, -1).T
    traj = replace(plan, start=Gaussian(z[:2], S)).integrate(points_per_piece=2)
    return moments_vector(traj.mean[-1], traj.cov[-1])


def output_covariance(plan: ControlPlan, n: int) -> np.ndarray:
    """Monte-Carlo covariance of the endpoint when the start is an n-sample: J C0 Jᵀ with J the
    (central-difference) Jacobian of the plan's endpoint in the starting moments."""
    z0 = moments_vector(plan.start.mean, plan.start.cov)
    h = 1e-5
    J = np.array([(plan_image(plan, z0 + h * e) - plan_image(plan, z0 - h * e)) / (2 * h)
                  for e in np.eye(z0.size)]).T
    return J @ sampling_covariance(plan.start, n) @ J.T


def particle_check(controls, n, steps, seed):
    """(χ² statistic of the particle endpoint against the target under the plan's Monte-Carlo
    covariance, its 1 − 1e-3 bound, the largest finite-N error in MC standard deviations, the
    plan and the endpoint's MC covariance)."""
    plan = steer(START, TARGET, 1.0, controls=controls)
    x0 = START.sample(n, np.random.default_rng(seed))
    run = plan.particles(x0, steps_per_piece=steps)
    C = output_covariance(plan, n)
    delta = moments_vector(run.mean[-1], run.cov[-1]) - moments_vector(TARGET.mean, TARGET.cov)
    stat = float(delta @ np.linalg.solve(C, delta))
    mean_field = plan_image(plan, moments_vector(x0.mean(axis=0), np.cov(x0.T)))
    finite_n = np.abs(moments_vector(run.mean[-1], run.cov[-1]) - mean_field) / np.sqrt(np.diag(C))
    return stat, chi2.ppf(QUANTILE, df=5), float(finite_n.max()), plan, C


def test_affine_plan_moves_20000_particles_onto_the_target():
    """Must-show 2, affine route (no attention is evaluated): the endpoint's MC covariance is
    exactly that of 20 000 i.i.d. target samples, the cloud is within its χ² bound, and it sits
    on the plan's image of its own initial moments (the flow is affine)."""
    stat, bound, finite_n, _, C = particle_check("affine", 20_000, 8, seed=11)
    np.testing.assert_allclose(C, sampling_covariance(TARGET, 20_000), rtol=1e-6, atol=1e-12)
    assert stat <= bound
    assert finite_n < 1e-3


def test_attention_plan_moves_particles_onto_the_target():
    """Must-show 2 at N = 5 000 (true softmax attention, 4 RK4 steps): within the χ² bound of the
    plan's Monte-Carlo covariance, and the finite-N attention error below one MC deviation."""
    stat, bound, finite_n, _, _ = particle_check("attention", 5_000, 4, seed=12)
    assert stat <= bound
    assert finite_n < 1.0


def test_particle_time_step_is_far_below_monte_carlo_error():
    """Step doubling at N = 1000: the error of 4 RK4 steps, (16/15)|z_4 − z_8|, is below a tenth
    of the N = 20 000 Monte-Carlo standard deviation of every endpoint moment."""
    plan = steer(START, TARGET, 1.0, controls="attention")
    x0 = START.sample(1000, np.random.default_rng(3))
    a, b = (plan.particles(x0, steps_per_piece=s) for s in (4, 8))
    error = 16 / 15 * np.abs(moments_vector(a.mean[-1], a.cov[-1])
                             - moments_vector(b.mean[-1], b.cov[-1]))
    sd = np.sqrt(np.diag(output_covariance(plan, 20_000)))
    assert np.all(error < 0.1 * sd)
    assert np.any(error > 0)


@pytest.mark.long  # the check of the N = 5000 test above at N = 20 000: a minute of CPU
def test_attention_plan_moves_20000_particles_onto_the_target():
    """Must-show 2 at N = 20 000 (one attention evaluation ≈ 2 s here; 16 of them)."""
    stat, bound, finite_n, _, _ = particle_check("attention", 20_000, 4, seed=13)
    assert stat <= bound
    assert finite_n < 1.0


# --------------------------------------------------------------------------- shooting

def test_values_configuration_is_solved_by_shooting(rng):
    """Value matrix V(t) and bias b(t) with a held query–key B: multiple shooting succeeds, and
    an independent Radau integration confirms it."""
    start = Gaussian([0.2, -0.1], [[1.0, 0.2], [0.2, 0.7]])
    target = Gaussian([-0.3, 0.4], [[0.8, -0.1], [-0.1, 1.1]])
    plan = steer(start, target, 1.0, controls="values")
    assert plan.route == "shooting" and plan.success and plan.residual <= TOL
    assert plan.accessibility.full
    B = plan.fixed["B"]
    for piece in plan.pieces:
        np.testing.assert_array_equal(piece.layer.B, B)
        assert not np.any(piece.layer.A)
    mean, cov = radau_endpoint(plan)
    assert relative_error(mean, cov, plan) <= TOL


def test_unreachable_mean_is_detected_and_explained():
    """Must-show 4: without a bias a centred Gaussian keeps m = 0 (ṁ = (A + V + VΣB) m), so a
    target with nonzero mean is refused with the accessibility ranks (3 at the start, 5 there)."""
    start = Gaussian([0.0, 0.0], [[1.0, 0.2], [0.2, 0.7]])
    target = Gaussian([0.5, -0.3], [[0.8, -0.1], [-0.1, 1.1]])
    for controls in ("values-nobias", "attention-nobias"):
        with pytest.raises(UnreachableError, match="m = 0 is invariant") as info:
            steer(start, target, 1.0, controls=controls)
        assert info.value.start.rank < info.value.target.rank == info.value.target.expected
        assert info.value.start.mean_rank == 0


NOBIAS_START = Gaussian([0.3, 0.1], [[1.0, 0.2], [0.2, 0.7]])
NOBIAS_TARGET = Gaussian([1.5, -0.3], [[0.8, -0.1], [-0.1, 1.1]])


def test_rank_condition_failure_is_refused():
    """affine-nobias keeps mᵀΣ⁻¹m: the rank test refuses (4 < 5)."""
    with pytest.raises(UnreachableError, match="rank condition fails"):
        steer(NOBIAS_START, NOBIAS_TARGET, 1.0, controls="affine-nobias")


@pytest.mark.long  # the forced solver spends its whole budget: 15 s of CPU
def test_forced_past_the_rank_condition_the_solver_is_honest():
    """Forced, the solver reports failure with the residual it reached, and the invariant
    mᵀΣ⁻¹m explains why."""
    start, target = NOBIAS_START, NOBIAS_TARGET
    plan = steer(start, target, 1.0, controls="affine-nobias", check_accessibility=False)
    assert not plan.success and plan.residual > TOL and "FAILED" in plan.message
    assert plan.residual == pytest.approx(plan.verify(), rel=1e-6)

    def invariant(g):
        return g.mean @ np.linalg.solve(g.cov, g.mean)

    assert abs(invariant(start) - invariant(target)) > 0.1


def test_imposed_value_matrix_on_a_degenerate_stratum_is_refused(rng):
    """attention with a held V cannot turn a rank-1 covariance freely (rank 3 < 4 in d = 2)."""
    start, target = random_gaussian(rng, 2, 1), random_gaussian(rng, 2, 1)
    with pytest.raises(UnreachableError, match="3 of the 4"):
        steer(start, target, 1.0, controls="attention", fixed={"V": np.eye(2) + 0.1})


def test_batched_shooting_field_matches_the_moment_equations(rng):
    """The shooting solver's batched right-hand side equals state.moments.moment_arrays."""
    from riccati_tf.reachability.steering.shooting import _batched_rhs
    from riccati_tf.state.moments import moment_arrays

    k, d = 4, 3
    A, B, V = (rng.standard_normal((k, d, d)) for _ in range(3))
    b, m = rng.standard_normal((k, d)), rng.standard_normal((k, d))
    L = rng.standard_normal((k, d, d))
    S = L @ np.swapaxes(L, 1, 2)
    dm, dS = _batched_rhs(A, B, V, b, m, S)
    for i in range(k):
        em, eS = moment_arrays(Params(A[i], B=B[i], V=V[i], b=b[i]), m[i], S[i])
        np.testing.assert_allclose(dm[i], em, rtol=1e-13, atol=1e-12)
        np.testing.assert_allclose(dS[i], eS, rtol=1e-13, atol=1e-12)


def test_horizon_is_t_final_and_T_is_a_deprecated_alias():
    rng = np.random.default_rng(21)
    start, target = random_gaussian(rng, 2, 2), random_gaussian(rng, 2, 2)
    plan = steer(start, target, t_final=1.5)
    assert plan.t_final == plan.T == 1.5 and plan.breakpoints[-1] == 1.5
    with pytest.warns(DeprecationWarning, match="pass t_final"):
        old = steer(start, target, T=1.5)
    for a, b in zip(old.pieces, plan.pieces, strict=True):
        np.testing.assert_array_equal(a.layer.A, b.layer.A)
        np.testing.assert_array_equal(a.layer.b, b.layer.b)
    with pytest.raises(InvalidInputError, match="not both"):
        steer(start, target, 1.0, T=1.0)
    with pytest.raises(InvalidInputError, match=r"t_final .*is required"):
        steer(start, target)


def test_plan_displays_are_compact():
    rng = np.random.default_rng(22)
    start, target = random_gaussian(rng, 2, 2), random_gaussian(rng, 2, 2)
    plan = steer(start, target, 1.0)
    text = repr(plan)
    assert text.startswith("ControlPlan(route='polar', controls='affine', d=2, t_final=1, "
                           "pieces=2, residual=") and text.endswith("success=True)")
    assert "array" not in text and "\n" not in text
    html = plan._repr_html_()
    assert html.count("constant on [") == 2 and "polar" in html
    latex = plan._repr_latex_()
    assert latex.count(r"\le t <") == 2 and latex.count(r"A = \begin{pmatrix}") == 2
    assert latex.count(r"b = \begin{pmatrix}") == sum(bool(np.any(p.layer.b))
                                                      for p in plan.pieces)
    assert f"{plan.pieces[0].layer.A[0, 0]:.4g}" in latex
    tracking = steer(start, target, 1.0, controls="attention")
    assert "tracking" in tracking._repr_latex_() and "tracking attention" in \
        tracking._repr_html_()
