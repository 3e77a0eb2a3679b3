"""riccati_tf.design: layers with a prescribed attracting Gaussian N(m*, Σ*).

Checked against computations that do not go through the design: the Bernoulli and Lyapunov
equations (scipy's Lyapunov solver), certify, the package's exact flow, and scipy's DOP853 on
the moment equations written out here.
"""

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.linalg import solve_continuous_lyapunov

from riccati_tf.design import attracting_layer
from riccati_tf.errors import InvalidInputError
from riccati_tf.flows.integrate import flow
from riccati_tf.state.params import Gaussian

#: targets checked by default, up to N_SLOW in make test (slow), all 50 in make test-long
N_FAST, N_SLOW = 15, 20
N_TARGETS = 50
#: starts per target for the exact flow, and how many of them DOP853 also integrates
N_STARTS, N_DOP = 10, 2
RTOL = 1e-8


def _rel(x, y):
    return float(np.linalg.norm(x - y) / np.linalg.norm(y))


def _target(rng, d, k):
    """N(m*, Σ*) with Σ* of rank k, eigenvalues log-uniform in [0.3, 3]."""
    Q = np.linalg.qr(rng.standard_normal((d, d)))[0][:, :k]
    s = np.exp(rng.uniform(np.log(0.3), np.log(3.0), k))
    return rng.standard_normal(d), (Q * s) @ Q.T


def _case(i):
    """Target i: d in 2..16, every third one rank-deficient, 1 or 4 heads, both gains."""
    rng = np.random.default_rng(1000 + i)
    d = 2 + i % 15
    k = d if i % 3 else int(rng.integers(1, d))
    heads = 4 if i % 2 else 1
    v = -rng.uniform(0.5, 2.0, heads)
    gain = "identity" if i % 4 == 3 else "precision"
    mean, cov = _target(rng, d, k)
    des = attracting_layer((mean, cov), v=v, heads=heads, gain=gain,
                           scale=float(rng.uniform(0.5, 2.0)))
    return rng, des, k


def _moment_rhs(params):
    """ṁ = (A + Σ V_h) m + Σ V_h Σ B_h m + b,  Σ̇ = AΣ + ΣAᵀ + Σ (V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ)."""
    A, b, d = np.array(params.A), np.array(params.b), params.d
    pairs = [(np.array(V), np.array(B)) for V, B in params.heads]

    def rhs(_t, y):
        m, S = y[:d], y[d:].reshape(d, d)
        dm = A @ m + b + sum(V @ m + V @ S @ B @ m for V, B in pairs)
        dS = A @ S + S @ A.T + sum(V @ S @ B @ S + S @ B.T @ S @ V.T for V, B in pairs)
        return np.concatenate([dm, dS.ravel()])

    return rhs


def _starts(rng, des, n):
    """n admissible starts: full rank, and for a rank-k target every other one of rank k."""
    d, k = des.params.d, des.rank
    out = []
    for j in range(n):
        r = k if (k < d and j % 2) else d
        L = rng.standard_normal((d, r))
        out.append(Gaussian(3 * rng.standard_normal(d), L @ L.T + (0.1 * np.eye(d) if r == d
                                                                   else 0.0)))
    return out


@pytest.mark.parametrize("i", [i if i < N_FAST else pytest.param(
    i, marks=pytest.mark.slow if i < N_SLOW else pytest.mark.long) for i in range(N_TARGETS)])
def test_designed_layer_attracts_the_target(i):
    rng, des, k = _case(i)
    p, d = des.params, des.params.d
    m_star, S_star = des.target.mean, des.target.cov
    A, G = np.array(p.A), np.array(des.G)
    assert np.array_equal(G, p.G)
    # the equations the design rests on, checked on the layer's own arrays
    assert _rel(A @ S_star + S_star @ A.T, S_star @ G @ S_star) < 1e-12
    assert des.residual_cov < 1e-12 and des.residual_mean < 1e-12
    U = des.basis
    Ak, Gk = U.T @ A @ U, U.T @ G @ U
    P = solve_continuous_lyapunov(Ak.T, Gk)  # A_kᵀP + PA_k = G_k
    assert _rel(P, np.linalg.inv(U.T @ S_star @ U)) < 1e-10
    assert np.min(np.linalg.eigvals(Ak).real) > 0
    assert np.allclose(A @ U, U @ Ak, atol=1e-12 * np.linalg.norm(A))  # range Σ* invariant
    vbar = sum(p.value_scalars)
    assert des.mean_rate == pytest.approx(-vbar, rel=1e-10)
    assert des.rate <= des.rate_bound * (1 + 1e-12)
    if k == d:
        assert des.rate == pytest.approx(2 * np.min(np.linalg.eigvals(A).real), rel=1e-12)
        assert np.min(np.linalg.eigvalsh(G)) > 0

    starts = _starts(rng, des, N_STARTS)
    # certify: a full-rank start converges to (m*, Σ*), every target
    full = starts[0]
    c = des.certificate(full)
    assert c.regime == "converges" and c.check()
    assert _rel(c.equilibrium.cov, S_star) < RTOL
    assert _rel(c.equilibrium.mean, m_star) < RTOL
    if k < d:  # rank-k starts: certify may not decide, but never contradicts
        c = des.certificate(starts[1])
        assert c.regime in ("converges", "undetermined") and c.check()
        if c.regime == "converges":
            assert _rel(c.equilibrium.cov, S_star) < RTOL

    T = 40 / min(des.rate, des.mean_rate)
    t_mid = 1 / des.rate
    rhs = _moment_rhs(p)
    for j, g in enumerate(starts):
        assert des.admits(g.cov)
        tr = flow(p, g, T, method="exact", t_eval=[0.0, t_mid, T])
        assert _rel(tr[-1].cov, S_star) < RTOL
        assert _rel(tr[-1].mean, m_star) < RTOL
        assert np.linalg.matrix_rank(tr[1].cov, tol=1e-9 * np.linalg.norm(tr[1].cov)) == \
            np.linalg.matrix_rank(g.cov, tol=1e-9 * np.linalg.norm(g.cov))
        if j < N_DOP or (k < d and j == N_DOP + 1):
            y0 = np.concatenate([g.mean, g.cov.ravel()])
            sol = solve_ivp(rhs, (0.0, T), y0, method="DOP853", rtol=1e-12, atol=1e-14,
                            t_eval=[t_mid, T])
            assert sol.success
            m_mid, S_mid = sol.y[:d, 0], sol.y[d:, 0].reshape(d, d)
            assert _rel(tr[1].cov, S_mid) < RTOL and _rel(tr[1].mean, m_mid) < RTOL
            assert _rel(sol.y[d:, 1].reshape(d, d), S_star) < RTOL
            assert _rel(sol.y[:d, 1], m_star) < RTOL


def test_start_outside_the_admissible_set_converges_elsewhere():
    """Rank-1 target diag(2, 0), rank-1 start along ker Σ*: UᵀΣ0U = 0, and Σ(t) stays on that
    line, following σ̇ = −κσ − γσ² (A = −κ/2, G = γ there; κ = 1, γ = c/λ_max = 1/2), so
    σ(t) = 1/((1/σ0 + γ/κ)e^{κt} − γ/κ) → 0: never Σ*."""
    des = attracting_layer(([0.0, 0.0], np.diag([2.0, 0.0])))
    assert np.allclose(des.params.A, np.diag([0.5, -0.5]), atol=1e-15)
    assert np.allclose(des.G, np.diag([0.5, 0.5]), atol=1e-15)
    g = Gaussian([0.0, 0.0], np.diag([0.0, 1.0]))
    assert not des.admits(g.cov)
    t = np.array([0.0, 1.0, 20.0])
    tr = flow(des.params, g, 20.0, method="exact", t_eval=t)
    sigma = 1 / (1.5 * np.exp(t) - 0.5)
    for j in range(3):
        assert np.allclose(tr[j].cov, np.diag([0.0, sigma[j]]), rtol=1e-12, atol=0)


# --------------------------------------------------------------------------- criteria

def _skew(rng, d):
    X = rng.standard_normal((d, d))
    return X - X.T


@pytest.mark.parametrize("seed", range(6))
def test_min_norm_beats_zero_and_random_skew(seed):
    rng = np.random.default_rng(seed)
    d = 3 + seed
    mean, cov = _target(rng, d, d)
    Bs = rng.standard_normal((2, d, d)) * 0.3 + np.eye(d)  # nonsymmetric, G ≻ 0 for v < 0
    des = attracting_layer((mean, cov), v=[-1.0, -0.5], heads=2, B=Bs)
    A, G, Sinv = des.params.A, des.G, np.linalg.inv(cov)
    A_zero = 0.5 * cov @ G
    assert np.linalg.norm(A) <= np.linalg.norm(A_zero) + 1e-12
    assert np.linalg.norm(A) < np.linalg.norm(A_zero) - 1e-6  # G ≠ cΣ*⁻¹: K = 0 not optimal
    for _ in range(20):
        K = _skew(rng, d) * rng.uniform(0.01, 1.0)
        assert np.linalg.norm(A) <= np.linalg.norm(A_zero + K @ Sinv) + 1e-12
    # nonsymmetric B_h: K* still has its spectrum on Re λ = v_1 + v_2, and certify agrees
    assert des.mean_rate == pytest.approx(1.5, rel=1e-10)
    c = des.certificate(Gaussian(np.zeros(d), np.eye(d)))
    assert c.regime == "converges" and c.check()
    assert _rel(c.equilibrium.cov, cov) < RTOL and _rel(c.equilibrium.mean, mean) < RTOL
    # A is of the admissible form: K = (A − ½Σ*G)Σ* is skew
    K = (A - A_zero) @ cov
    assert np.allclose(K, -K.T, atol=1e-12 * np.linalg.norm(A) * np.linalg.norm(cov))
    assert np.allclose(K, des.K, atol=1e-10)


def test_min_norm_with_precision_gain_is_k_zero():
    """G = cΣ*⁻¹: ‖(c/2)I + KΣ*⁻¹‖² = c²d/4 + ‖KΣ*⁻¹‖² (tr KΣ*⁻¹ = 0), minimal at K = 0."""
    rng = np.random.default_rng(7)
    mean, cov = _target(rng, 5, 5)
    des = attracting_layer((mean, cov), scale=2.0)
    assert np.allclose(des.K, 0, atol=1e-12)
    assert np.allclose(des.params.A, np.eye(5), atol=1e-12)
    assert des.rate == pytest.approx(2.0) and des.rate_bound == pytest.approx(2.0)


@pytest.mark.parametrize("seed", range(4))
def test_closest(seed):
    rng = np.random.default_rng(100 + seed)
    d = 3 + 2 * seed
    mean, cov = _target(rng, d, d)
    kw = dict(v=-0.7, heads=4, gain="identity", scale=1.5)
    G = attracting_layer((mean, cov), **kw).G
    Sinv = np.linalg.inv(cov)
    A_zero = 0.5 * cov @ G
    A0 = rng.standard_normal((d, d))
    A = attracting_layer((mean, cov), A0=A0, criterion="closest", **kw).params.A
    assert np.linalg.norm(A - A0) < np.linalg.norm(A_zero - A0)
    for _ in range(20):
        K = _skew(rng, d) * rng.uniform(0.01, 1.0)
        assert np.linalg.norm(A - A0) <= np.linalg.norm(A_zero + K @ Sinv - A0) + 1e-12
    # an admissible A0 is reproduced
    K0 = _skew(rng, d)
    A0 = A_zero + K0 @ Sinv
    des = attracting_layer((mean, cov), A0=A0, criterion="closest", **kw)
    assert _rel(des.params.A, A0) < 1e-12
    assert _rel(des.K, K0) < 1e-10


def test_precision_gain_rate_is_scale_for_every_k():
    """G = cΣ*⁻¹: A = (c/2)I + KΣ*⁻¹ has Re λ(A) = c/2 whatever K (here K from a random A0)."""
    rng = np.random.default_rng(11)
    mean, cov = _target(rng, 6, 6)
    des = attracting_layer((mean, cov), A0=rng.standard_normal((6, 6)), criterion="closest",
                           scale=1.7, heads=4, v=-0.25)
    assert np.linalg.norm(des.K) > 0.1
    assert np.allclose(np.linalg.eigvals(des.params.A).real, 0.85, rtol=1e-10)
    assert des.rate == pytest.approx(1.7, rel=1e-10) == des.rate_bound
    assert des.mean_rate == pytest.approx(1.0, rel=1e-10)


def test_closest_rank_deficient_reproduces_admissible_a0():
    rng = np.random.default_rng(5)
    mean, cov = _target(rng, 6, 3)
    des0 = attracting_layer((mean, cov), gain="identity")
    U = des0.basis
    K0 = U @ _skew(rng, 3) @ U.T
    A0 = des0.params.A + K0 @ np.linalg.pinv(cov)
    des = attracting_layer((mean, cov), gain="identity", A0=A0, criterion="closest")
    assert _rel(des.params.A, A0) < 1e-12
    assert _rel(des.K, K0) < 1e-10


def test_rank_argument_truncates():
    rng = np.random.default_rng(3)
    mean, cov = _target(rng, 4, 4)
    des = attracting_layer((mean, cov), rank=2)
    e, Q = np.linalg.eigh(cov)
    assert des.rank == 2
    assert np.allclose(des.target.cov, (Q[:, 2:] * e[2:]) @ Q[:, 2:].T, atol=1e-14)


# --------------------------------------------------------------------------- bad input

GOOD = (np.zeros(2), np.eye(2))


@pytest.mark.parametrize("kwargs, match", [
    (dict(target=(np.zeros(2), [[1.0, 0.0], [0.0, -1.0]])), "target cov is not positive"),
    (dict(target=(np.zeros(2), [[np.nan, 0.0], [0.0, 1.0]])), "target cov contains NaN"),
    (dict(target=(np.zeros(2), [[1.0, 2.0], [0.0, 1.0]])), "target cov is not symmetric"),
    (dict(target=(np.zeros(2), np.ones((2, 3)))), "target cov must be a square matrix"),
    (dict(target=(np.zeros(3), np.eye(2))), "target mean must be a vector of length d = 2"),
    (dict(target=(np.zeros(2), np.zeros((2, 2)))), "target cov is 0"),
    (dict(target=np.eye(2)), "target must be a riccati_tf Gaussian or a"),
    (dict(v=0.0), "v must be < 0"),
    (dict(v=1.0), "v must be < 0"),
    (dict(v=[-1.0, -1.0]), r"v must be one number or one per head \(heads = 1\)"),
    (dict(v=float("inf")), "v contains NaN or Inf"),
    (dict(heads=0), "heads must be ≥ 1"),
    (dict(B=-np.eye(2)), "G must be ≻ 0"),
    (dict(B=np.diag([1.0, 0.0])), "G must be ≻ 0"),
    (dict(B=np.eye(3)), "B must be 2×2"),
    (dict(B=np.eye(2), heads=2), "B must be 2×2 .one head. or 2×2×2"),
    (dict(criterion="fastest"), "criterion must be one of"),
    (dict(criterion="closest"), "A0 is required by criterion 'closest'"),
    (dict(A0=np.eye(2)), "A0 is required by criterion 'closest'"),
    (dict(A0=np.eye(3), criterion="closest"), "A0 must be 2×2"),
    (dict(gain="unit"), "gain must be one of"),
    (dict(scale=-1.0), "scale must be > 0"),
    (dict(rank=3), "rank must be ≤ 2"),
    (dict(rank=0), "rank must be ≥ 1"),
])
def test_bad_input(kwargs, match):
    kwargs = {"target": GOOD, **kwargs}
    with pytest.raises(InvalidInputError, match=match) as info:
        attracting_layer(kwargs.pop("target"), **kwargs)
    assert "\n" not in str(info.value)


def test_rank_deficient_target_needs_g_positive_on_its_range():
    target = (np.zeros(2), np.diag([1.0, 0.0]))
    with pytest.raises(InvalidInputError, match="≻ 0 on range Σ"):
        attracting_layer(target, B=np.diag([0.0, 1.0]))
    des = attracting_layer(target, B=np.diag([1.0, 0.0]))  # G ⪰ 0, ≻ 0 on range Σ*
    assert des.rank == 1 and des.residual_cov < 1e-14


def test_design_is_immutable():
    des = attracting_layer(GOOD)
    with pytest.raises(AttributeError):
        des.rate = 2.0
    for arr in (des.G, des.K, des.basis):
        with pytest.raises(ValueError):
            arr[0, 0] = 1.0


def test_targets_at_the_ends_of_the_float_range():
    """Targets of size 1e-300 and 1e300 are designed with finite residuals (computed in
    rescaled units) and certified; one whose layer would overflow (b = −K*m* with
    |m*| = 1e300 and v = −1e10) is refused naming the target."""
    cov = np.array([[3e-300, 1e-300], [1e-300, 2e-300]])
    des = attracting_layer(([0.0, 0.0], cov))
    assert np.isfinite(des.residual_cov) and des.residual_cov < 1e-12
    c = des.certificate(Gaussian(np.zeros(2), 2 * cov))
    assert c.regime == "converges" and c.check()
    assert _rel(c.equilibrium.cov / 1e-300, cov / 1e-300) < RTOL
    big = attracting_layer(([0.0, 0.0], 1e300 * cov / 1e-300))
    assert big.residual_cov < 1e-12
    c = big.certificate(Gaussian(np.zeros(2), np.eye(2)))
    assert c.regime == "converges" and c.check()
    with pytest.raises(InvalidInputError, match="target: the layer for this target overflows"):
        attracting_layer(([1e300, 0.0], np.eye(2)), v=-1e10)
