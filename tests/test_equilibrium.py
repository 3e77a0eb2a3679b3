"""Equilibria of the covariance flow: Bernoulli (scalar V), invariant-subspace enumeration,
Newton for general V, the linearisation L, and the mean equilibrium."""

import numpy as np
import pytest

from riccati_tf import Gaussian, Params, equilibria, flow
from riccati_tf.errors import InvalidInputError, SolverError
from riccati_tf.stability.equilibria.constants import SETTLE_RHS_BUDGET
from riccati_tf.stability.equilibria.coords import from_coords, sym_basis, to_coords
from riccati_tf.stability.equilibria.field import F
from riccati_tf.stability.equilibria.linearization import (
    apply_linearization,
    linearization_matrix,
    linearization_operator,
    spectral_abscissa,
)
from riccati_tf.stability.equilibria.newton import newton
from riccati_tf.stability.equilibria.search import equilibrium_search
from riccati_tf.stability.riccati import bernoulli


def matrix_with_spectrum(rng, re_parts, im_parts=None, cond=0.3):
    """A = X D X⁻¹, D block diagonal: a real eigenvalue re_parts[i] when im_parts[i] = 0, else
    the 2×2 block [[a, b], [−b, a]] (eigenvalues a ± ib). X = I + cond·(random)/√d."""
    im_parts = np.zeros(len(re_parts)) if im_parts is None else im_parts
    blocks = [np.array([[a]]) if b == 0 else np.array([[a, b], [-b, a]])
              for a, b in zip(re_parts, im_parts, strict=True)]
    d = sum(b.shape[0] for b in blocks)
    D = np.zeros((d, d))
    i = 0
    for blk in blocks:
        k = blk.shape[0]
        D[i:i + k, i:i + k] = blk
        i += k
    X = np.eye(d) + cond * rng.standard_normal((d, d)) / np.sqrt(d)
    return X @ D @ np.linalg.inv(X)


def random_pd(rng, d, lo=0.2):
    R = rng.standard_normal((d, d)) / np.sqrt(d)
    return R @ R.T + lo * np.eye(d)


def layer_from_G(rng, A, G, *, heads=1, perturb=0.0):
    """Params with V_h = v_h I (+ perturb · |v_h| · noise) and B_h = −G/(2 H v_h) + skew, so that
    the scalar-V matrix −Σ_h v_h (B_h + B_hᵀ) equals G when perturb = 0."""
    d = A.shape[0]
    pairs = []
    for _ in range(heads):
        v = rng.choice([-1.0, 1.0]) * rng.uniform(0.5, 2.0)
        K = rng.standard_normal((d, d))
        B = -G / (2 * heads * v) + 0.3 * (K - K.T)
        V = v * np.eye(d) + perturb * abs(v) * rng.standard_normal((d, d)) / np.sqrt(d)
        pairs.append((V, B))
    if heads == 1:
        return Params(A, B=pairs[0][1], V=pairs[0][0])
    return Params(A, heads=pairs)


# ---------------------------------------------------------------- coordinates and L


def test_symmetric_coordinates_are_an_isometry(rng):
    d = 5
    N = sym_basis(d)
    assert np.allclose(N.T @ N, np.eye(d * (d + 1) // 2), atol=1e-15)
    H = rng.standard_normal((d, d))
    H = H + H.T
    h = to_coords(H)
    assert np.linalg.norm(h) == pytest.approx(np.linalg.norm(H), rel=1e-14)
    assert np.allclose(from_coords(h, d), H, atol=1e-14)
    assert np.allclose(N @ h, H.ravel(), atol=1e-14)


@pytest.mark.parametrize("heads", [1, 2])
def test_linearization_is_the_derivative_of_F(rng, heads):
    """F is quadratic, so the central difference (F(Σ+εH) − F(Σ−εH))/2ε is exactly L(H)."""
    d = 4
    pairs = [(rng.standard_normal((d, d)), rng.standard_normal((d, d))) for _ in range(heads)]
    p = Params(rng.standard_normal((d, d)), heads=pairs)
    S = random_pd(rng, d)
    H = rng.standard_normal((d, d))
    H = H + H.T
    central = (F(p, S + 0.5 * H) - F(p, S - 0.5 * H))
    LH = apply_linearization(p, S, H)
    assert np.linalg.norm(central - LH) <= 1e-13 * np.linalg.norm(LH)
    L = linearization_matrix(p, S)
    assert np.allclose(L @ to_coords(H), to_coords(LH), rtol=0, atol=1e-12 * np.linalg.norm(LH))
    op = linearization_operator(p, S)
    assert np.allclose(op.matvec(to_coords(H)), to_coords(LH), atol=1e-12 * np.linalg.norm(LH))


# ---------------------------------------------------------------- scalar V


def test_scalar_d1_equilibria_closed_form():
    # σ̇ = 2aσ + 2vbσ²: equilibria 0 and −a/(vb) when positive
    for a, v, b in [(0.7, -1.0, 2.0), (-0.7, 1.0, 2.0), (0.7, 1.0, 2.0)]:
        p = Params([[a]], B=[[b]], V=[[v]])
        found = sorted(e.cov[0, 0] for e in equilibria(p, which="all"))
        expect = sorted([0.0] + ([-a / (v * b)] if -a / (v * b) > 0 else []))
        assert found == pytest.approx(expect, rel=1e-14, abs=0)
        stable = equilibria(p)
        if a > 0 and v * b < 0:
            assert len(stable) == 1 and stable[0].cov[0, 0] == pytest.approx(-a / (v * b))
            assert stable[0].spectral_abscissa == pytest.approx(-2 * a, rel=1e-12)
        elif a < 0:
            assert len(stable) == 1 and stable[0].rank == 0
        else:
            assert stable == []  # a > 0 and vb > 0: no stable covariance equilibrium


def test_scalar_stable_equilibrium_is_stabilizing_and_certified_by_L(rng):
    A = matrix_with_spectrum(rng, [1.0, 0.5, -0.8, -1.5], [0.7, 0.0, 0.0, 0.0])
    d = A.shape[0]
    p = layer_from_G(rng, A, random_pd(rng, d), heads=2)
    (eq,) = equilibria(p)
    assert eq.stable and eq.residual <= 1e-13
    assert eq.rank == 3  # eigenvalues 1 ± 0.7i and 0.5 have Re > 0
    assert eq.method == "bernoulli-schur"
    # abscissa from the closed loop equals the largest real eigenvalue of the assembled L
    assert eq.spectral_abscissa == pytest.approx(spectral_abscissa(p, eq.cov), rel=1e-9)
    assert np.max(np.linalg.eigvals(p.A - eq.cov @ p.G).real) < 0
    # the same matrix from SLICOT
    assert np.allclose(eq.cov, bernoulli(p.A, p.G, method="care").X, atol=1e-12)


def test_enumeration_counts_subspaces_in_the_unstable_part(rng):
    """G ≻ 0: P on an invariant subspace R is ≻ 0 iff A|R is anti-stable, so the covariance
    equilibria are one per invariant subspace of the unstable part: 2^(number of groups)."""
    re, im = [1.2, 0.6, 0.9, -0.7, -1.3], [0.0, 0.8, 0.0, 0.0, 0.0]
    A = matrix_with_spectrum(rng, re, im)
    p = layer_from_G(rng, A, random_pd(rng, A.shape[0]))
    found = equilibria(p, which="all")
    assert len(found) == 2 ** 3  # groups {1.2}, {0.6 ± 0.8i}, {0.9}
    assert sorted(e.rank for e in found) == [0, 1, 1, 2, 2, 3, 3, 4]
    assert sum(e.stable for e in found) == 1
    (stable,) = [e for e in found if e.stable]
    assert np.allclose(stable.cov, equilibria(p)[0].cov, atol=1e-12)
    for e in found:
        assert e.residual <= 1e-12
        assert np.linalg.eigvalsh(e.cov)[0] >= -1e-12 * max(1.0, np.linalg.norm(e.cov))
        # Newton from a perturbation returns to the same equilibrium (an independent solver)
        got = newton(p, e.cov + 1e-4 * np.eye(A.shape[0]) * (e.rank == A.shape[0]))
        assert got is not None and np.linalg.norm(got[0] - e.cov) <= 1e-9 * max(
            1.0, np.linalg.norm(e.cov))


def test_enumeration_refuses_large_d_and_repeated_eigenvalues(rng):
    with pytest.raises(InvalidInputError, match="d ≤ 10"):
        equilibria(Params(np.eye(11), B=np.eye(11), V=-np.eye(11)), which="all")
    with pytest.raises(SolverError, match="repeated eigenvalue"):
        equilibria(Params(np.eye(3), B=np.eye(3), V=-np.eye(3)), which="all")
    with pytest.raises(SolverError, match="sum to"):
        equilibria(Params(np.diag([1.0, -1.0, 2.0]), B=np.eye(3), V=-np.eye(3)), which="all")


def test_stable_refuses_eigenvalue_on_the_axis():
    with pytest.raises(SolverError, match="imaginary axis"):
        equilibria(Params(np.diag([1.0, 0.0]), B=np.eye(2), V=-np.eye(2)))


def test_no_stable_covariance_equilibrium_when_mode_unseen():
    A = np.array([[1.0, 0.3], [0.0, -1.0]])
    p = Params(A, B=np.diag([0.0, 1.0]), V=-np.eye(2))  # G = 2 diag(0, 1), G e₁ = 0
    assert equilibria(p) == []


# ---------------------------------------------------------------- general V


def test_general_V_continuation_tracks_scalar_solution(rng):
    A = matrix_with_spectrum(rng, [1.0, 0.8, 1.4])
    d = 3
    G = random_pd(rng, d)
    base = layer_from_G(rng, A, G)
    v = base.heads[0][0][0, 0]
    scalar = equilibria(base)[0].cov
    eps = 1e-6
    R = rng.standard_normal((d, d))
    p = Params(A, B=base.heads[0][1], V=v * np.eye(d) + eps * (R - np.trace(R) / d * np.eye(d)))
    assert p.value_scalars is None
    found = equilibria(p)
    assert len(found) == 1
    eq = found[0]
    assert eq.stable and eq.residual <= 1e-12 and eq.rank == d
    assert np.linalg.norm(eq.cov - scalar) <= 100 * eps * np.linalg.norm(scalar)
    assert eq.method.startswith("newton")


def test_general_V_stable_equilibrium_attracts_the_flow(rng):
    A = matrix_with_spectrum(rng, [1.0, 0.6, -0.9], [0.0, 0.0, 0.0])
    p = layer_from_G(rng, A, random_pd(rng, 3), perturb=0.3)
    assert p.value_scalars is None
    (eq,) = equilibria(p)
    assert eq.stable and eq.residual <= 1e-12
    traj = flow(p, Gaussian(np.zeros(3), eq.cov + 0.01 * np.eye(3)), 40.0, method="rk")
    assert np.linalg.norm(traj.cov[-1] - eq.cov) <= 1e-7 * np.linalg.norm(eq.cov)
    # an unstable equilibrium of the same layer repels: abscissa > 0
    unstable = [e for e in equilibria(p, which="all") if not e.stable]
    assert unstable and all(e.spectral_abscissa > 0 for e in unstable)


def test_mean_equilibrium_is_the_limit_of_the_mean(rng):
    A = matrix_with_spectrum(rng, [0.8, 1.1])
    K = rng.standard_normal((2, 2))
    B = random_pd(rng, 2) / 6 + 0.2 * (K - K.T)
    V = -3.0 * np.eye(2) + 0.2 * rng.standard_normal((2, 2))  # v = −3 makes K* Hurwitz
    b = np.array([0.5, -1.0])
    p = Params(A, B=B, V=V, b=b)
    eqs = equilibria(p, which="all")
    with_mean = [e for e in eqs if e.stable and e.mean is not None]
    assert with_mean
    eq = with_mean[0]
    K = p.M(eq.cov) + V
    assert np.max(np.linalg.eigvals(K).real) < 0
    assert np.allclose(K @ eq.mean + b, 0, atol=1e-12)
    traj = flow(p, Gaussian(np.zeros(2), eq.cov), 60.0, method="rk")
    assert np.allclose(traj.mean[-1], eq.mean, atol=1e-7)


def test_matrix_free_newton_beyond_kronecker_size(rng):
    d = 32
    re = rng.uniform(0.4, 1.5, d)
    A = matrix_with_spectrum(rng, re)
    p = layer_from_G(rng, A, random_pd(rng, d), perturb=0.05)
    (eq,) = equilibria(p)
    assert eq.residual <= 1e-11 and eq.stable and eq.rank == d
    L = linearization_matrix(p, eq.cov)  # dense comparison (1024² Kronecker, fine once)
    assert eq.spectral_abscissa == pytest.approx(np.max(np.linalg.eigvals(L).real), rel=1e-6)


def test_input_validation():
    p = Params(np.eye(2))
    with pytest.raises(InvalidInputError, match="which must be"):
        equilibria(p, which="some")
    with pytest.raises(InvalidInputError, match="params must be"):
        equilibria(np.eye(2))
    with pytest.raises(InvalidInputError, match=r"starts\[0\]"):
        equilibria(Params(np.eye(2), B=np.eye(2), V=np.diag([1.0, 2.0])), starts=[np.eye(3)])


BAD_STARTS = {"string": ["1 0; 0 1"], "complex": [np.eye(2) * (1 + 1j)],
              "bool": [np.eye(2, dtype=bool)], "shape": [np.eye(3)],
              "asymmetric": [np.array([[1.0, 0.5], [0.0, 1.0]])],
              "indefinite": [np.diag([1.0, -1.0])], "nan": [np.full((2, 2), np.nan)],
              "not a list": "abc", "none": None, "number": 3.0}


@pytest.mark.parametrize("label", sorted(BAD_STARTS))
def test_equilibria_starts_are_covariances(label):
    p = Params(A=np.diag([1.0, -0.5]), V=np.array([[1.0, 0.2], [0.0, 1.0]]), B=-np.eye(2))
    with pytest.raises(InvalidInputError, match="starts"):
        equilibria(p, starts=BAD_STARTS[label])


def test_a_single_start_matrix_is_refused_with_the_fix():
    # one d×d array would be iterated as d rows: the message names the list form instead
    p = Params(A=np.diag([1.0, -0.5]), V=np.array([[1.0, 0.2], [0.0, 1.0]]), B=-np.eye(2))
    with pytest.raises(InvalidInputError, match=r"got one 2×2 array: pass \[S\]"):
        equilibria(p, starts=np.eye(2))
    stacked = equilibria(p, starts=np.eye(2)[None])  # a (k, d, d) stack is k starts
    listed = equilibria(p, starts=[np.eye(2)])
    assert [e.method for e in stacked] == [e.method for e in listed]
    assert all(np.array_equal(a.cov, b.cov) for a, b in zip(stacked, listed, strict=True))


@pytest.mark.parametrize("bad", [-1.0, 0.0, 1.0, 5.0, float("nan"), "1e-8", True, None])
def test_equilibria_and_newton_budgets_are_validated(bad):
    p = Params(A=np.diag([1.0, -0.5]), V=np.eye(2), B=-np.eye(2))
    with pytest.raises(InvalidInputError, match="axis_rtol"):
        equilibria(p, axis_rtol=bad)
    with pytest.raises(InvalidInputError, match="maxiter"):
        newton(p, np.eye(2), maxiter=bad)
    with pytest.raises(InvalidInputError, match="cov0"):
        newton(p, [[1.0, "x"], [0.0, 1.0]])


@pytest.mark.parametrize("s", [2.0 ** -1040, 1e-310, 1e-300, 1e-150, 1e150, 1e300])
@pytest.mark.parametrize("which", ["stable", "all"])
def test_scalar_equilibria_are_scale_invariant(s, which):
    # (sA, sV): F scales by s, the equilibria do not. A = diag(1, −2), G = 2I: Σ* = diag(1, 0)
    # (stable), and 0 (unstable) among all
    A = np.diag([1.0, -2.0])
    got = equilibria(Params(A=s * A, V=-s * np.eye(2), B=np.eye(2)), which=which)
    ref = equilibria(Params(A=A, V=-np.eye(2), B=np.eye(2)), which=which)
    assert [e.rank for e in got] == [e.rank for e in ref]
    for e, r in zip(got, ref, strict=True):
        np.testing.assert_allclose(e.cov, r.cov, rtol=1e-14, atol=1e-15)
        assert e.stable == r.stable and e.residual <= 1e-15
    assert any(np.allclose(e.cov, np.diag([1.0, 0.0]), rtol=1e-15, atol=0) for e in got)


@pytest.mark.parametrize("s", [1e-300, 1e-310])
def test_scalar_equilibrium_of_a_tiny_layer_is_the_identity(s):
    # AΣ + ΣAᵀ − ΣGΣ = 2sΣ − 2sΣ² = 0: Σ* = I, at every s
    (eq,) = equilibria(Params(A=s * np.eye(2), V=-s * np.eye(2), B=np.eye(2)))
    np.testing.assert_array_equal(eq.cov, np.eye(2))
    assert eq.stable and eq.rank == 2


def test_large_representable_equilibrium_is_returned_and_an_overflowing_one_refused():
    # A = I, G = 2vI: Σ* = I / v
    (eq,) = equilibria(Params(A=np.eye(2), V=-1e-300 * np.eye(2), B=np.eye(2)))
    np.testing.assert_allclose(eq.cov, 1e300 * np.eye(2), rtol=1e-15)
    assert eq.residual <= 1e-15 and eq.stable
    with pytest.raises(SolverError, match="not representable"):
        equilibria(Params(A=np.eye(2), V=-1e-310 * np.eye(2), B=np.eye(2)))


def test_relative_residual_is_scale_invariant(rng):
    from riccati_tf.stability.equilibria.field import relative_residual

    A, V, B = (rng.standard_normal((3, 3)) for _ in range(3))
    X = rng.standard_normal((3, 3))
    S = X @ X.T
    ref = relative_residual(Params(A=A, V=V, B=B), S)
    for v, b, s in [(2.0 ** 300, 2.0 ** -700, 2.0 ** 100), (2.0 ** -500, 2.0 ** 480, 2.0 ** 510),
                    (2.0 ** -520, 2.0 ** -520, 2.0 ** 500)]:
        a = v * b * s  # every term of F then scales by a·s = v·b·s²
        got = relative_residual(Params(A=a * A, V=v * V, B=b * B), s * S)
        assert got == pytest.approx(ref, rel=1e-13)


# ---------------------------------------------------------------- matrix-free Newton (d > 30)


def low_rank_value_layer(d: int, heads: int, seed: int = 0) -> Params:
    """benchmarks.equilibria's construction: V_h = −U_hU_hᵀ of rank d/heads (the U_h split an
    orthogonal matrix), B_h = B₀ + ε W_hW_hᵀ; A = 0.3 I + small noise (anti-stable)."""
    from benchmarks.equilibria import layer

    return layer(d, heads, d // heads, seed=seed)


def test_matrix_free_newton_low_rank_heads_against_dense_L():
    p = low_rank_value_layer(36, 12)
    assert p.value_scalars is None
    (eq,) = equilibria(p)
    assert eq.method == "newton[continuation]" and eq.stable and eq.rank == 36
    assert eq.residual <= 1e-12
    # independent checks: F from its definition, the spectrum of the assembled Kronecker L
    S = eq.cov
    ref = np.linalg.norm(p.A @ S) + sum(np.linalg.norm(V @ S @ B @ S) for V, B in p.heads)
    assert np.linalg.norm(F(p, S)) <= 1e-12 * ref
    top = np.max(np.linalg.eigvals(linearization_matrix(p, S)).real)
    assert eq.spectral_abscissa == pytest.approx(top, rel=1e-6) and top < 0


def test_matrix_free_newton_budget_is_a_solver_error():
    p = low_rank_value_layer(36, 12)
    start = equilibria(p)[0].cov * 1.2
    with pytest.raises(SolverError, match="budget of 2 GMRES iterations"):
        newton(p, start, krylov_budget=2)
    got = newton(p, start)
    assert got is not None and got[1] <= 1e-13
    for bad in (0, -1, 2.5, "5", None, True):
        with pytest.raises(InvalidInputError, match="krylov_budget"):
            newton(p, start, krylov_budget=bad)


def test_gmres_right_solves_a_preconditioned_system(rng):
    from riccati_tf.stability.equilibria.krylov import KrylovBudgetSpent, _KrylovBudget, gmres_right

    n = 80
    A = np.eye(n) * 3 + rng.standard_normal((n, n)) / np.sqrt(n)
    P = np.linalg.inv(A + 0.3 * rng.standard_normal((n, n)) / np.sqrt(n))  # a rough inverse
    b = rng.standard_normal(n)
    x = gmres_right(lambda v: A @ v, lambda v: P @ v, b, 1e-12, _KrylovBudget(200))
    assert np.linalg.norm(A @ x - b) <= 1e-11 * np.linalg.norm(b)
    assert np.allclose(x, np.linalg.solve(A, b), rtol=0, atol=1e-10)
    with pytest.raises(KrylovBudgetSpent):
        gmres_right(lambda v: A @ v, lambda v: v, b, 1e-14, _KrylovBudget(3))


def test_exact_line_search_minimises_the_residual_along_the_newton_step(rng):
    from riccati_tf.stability.equilibria.newton import exact_line_search

    A = matrix_with_spectrum(rng, [1.0, 0.6, -0.9])
    p = layer_from_G(rng, A, random_pd(rng, 3), perturb=0.3)
    S = 5.0 * random_pd(rng, 3)  # far from the equilibrium: a full step overshoots
    H = from_coords(np.linalg.solve(linearization_matrix(p, S), -to_coords(F(p, S))), 3)
    t = exact_line_search(F(p, S), F(p, S + H))
    grid = np.linspace(0.001, 1.0, 1000)
    norms = [np.linalg.norm(F(p, S + s * H)) for s in grid]
    assert np.linalg.norm(F(p, S + t * H)) <= min(norms) * (1 + 1e-3)


@pytest.mark.parametrize("seed", range(9))
def test_scalar_mean_hurwitz_matches_the_spectrum_of_K(seed):
    from riccati_tf.stability.equilibria.evidence import mean_equilibrium

    rng = np.random.default_rng(seed)
    d = 5
    signs = -np.ones(d) if seed % 3 == 0 else rng.choice([-1.0, 1.0], d)  # k = 0 or k > 0
    A = matrix_with_spectrum(rng, signs * rng.uniform(0.3, 1.5, d))
    b = rng.standard_normal(d)
    heads = []
    for v in rng.uniform(-1.5, 1.5, 2):  # Σ v_h of either sign
        K = rng.standard_normal((d, d))
        heads.append((v * np.eye(d), -np.sign(v) * random_pd(rng, d) + 0.3 * (K - K.T)))
    p = Params(A, heads=heads, b=b)
    for eq in equilibria(p):
        K = p.A + sum(V for V, _ in p.heads) + sum(V @ eq.cov @ B for V, B in p.heads)
        hurwitz = np.max(np.linalg.eigvals(K).real) < 0
        assert (eq.mean is not None) == hurwitz
        if hurwitz:
            np.testing.assert_allclose(eq.mean, mean_equilibrium(p, eq.cov), atol=1e-10)


# ------------------------------------------------------- stability beyond the dense spectrum


def _dense_abscissa(p: Params, S: np.ndarray) -> float:
    return float(np.max(np.linalg.eigvals(linearization_matrix(p, S)).real))


@pytest.mark.parametrize("d, heads", [(20, 4), (20, 2), (12, 3)])
def test_numerical_range_bound_agrees_with_the_dense_spectrum(d, heads):
    """At an equilibrium of the low-rank-value layer the bound decides (Lanczos for n_s > 150,
    the assembled symmetric part for d = 12) and bounds the dense abscissa from above."""
    from riccati_tf.stability.equilibria import linearization_stability
    from riccati_tf.stability.equilibria.continuation import _scalar_part
    from riccati_tf.stability.equilibria.scalar import _scalar_stable

    p = low_rank_value_layer(d, heads)
    (start,) = _scalar_stable(_scalar_part(p, 0.0), 1e-8)
    S = newton(p, start.cov)[0]
    s = linearization_stability(p, S)
    top = _dense_abscissa(p, S)
    assert s.method == "numerical-range" and s.stable and top < 0
    assert top <= s.value < 0 and s.residual <= 0.02 * abs(s.ritz)
    assert s.defect <= 1e-10 and s.quadratic > 0


@pytest.mark.parametrize("seed", range(6))
def test_linearization_stability_matches_the_dense_spectrum_with_fallback(seed):
    """Random layers and Σ ≻ 0 (the bound holds at any Σ ≻ 0, its defect ‖R⁻¹F(Σ)R⁻¹‖_F then
    large): stable and unstable cases, bound decisive or not (ARPACK fallback), singular Σ."""
    from riccati_tf.stability.equilibria import linearization_stability

    rng = np.random.default_rng(seed)
    d = 18
    N = rng.standard_normal((d, d)) / np.sqrt(d)
    A = (-1.0 if seed % 2 == 0 else 0.4) * np.eye(d) + (3.0 if seed % 3 == 0 else 0.2) * N
    heads = []
    for _ in range(2):
        U = rng.standard_normal((d, 3)) / np.sqrt(d)
        heads.append((-0.1 * U @ U.T, np.eye(d) + 0.1 * rng.standard_normal((d, d))))
    p = Params(A, heads=heads)
    X = rng.standard_normal((d, d if seed != 5 else d - 4))
    S = X @ X.T / d
    s = linearization_stability(p, S)
    top = _dense_abscissa(p, S)
    assert s.stable is not None and s.stable == (top < 0)
    if s.method == "numerical-range":
        assert top <= s.value
    else:
        assert s.method == "arnoldi" and s.value == pytest.approx(top, abs=1e-6)
    if seed == 5:
        assert s.method == "arnoldi" and "singular" in s.reason


def test_linearization_stability_says_undecided_when_the_fallback_budget_is_spent(monkeypatch):
    import importlib

    module = importlib.import_module("riccati_tf.stability.equilibria.linearization")
    rng = np.random.default_rng(3)
    d = 18
    A = 0.4 * np.eye(d) + 0.2 * rng.standard_normal((d, d)) / np.sqrt(d)
    p = Params(A, heads=[(-0.1 * np.eye(d)[:, :3] @ np.eye(d)[:3], np.eye(d))])
    monkeypatch.setattr(module, "ARNOLDI_MAXITER", 1)
    monkeypatch.setattr(module, "ARNOLDI_RTOL", 1e-15)
    s = module.linearization_stability(p, 0.01 * np.eye(d))
    assert s.stable is None and s.method == "undecided" and "ARPACK" in s.reason


def test_value_factors_reproduce_the_value_matrices(rng):
    from riccati_tf.state.lowrank import value_factors

    p = low_rank_value_layer(24, 4)
    vf = value_factors(p)
    assert vf.dense == () and vf.factored == (0, 1, 2, 3)
    for h, r in zip(vf.factored, vf.rows, strict=True):
        V = p.heads[h][0]
        assert np.linalg.norm(vf.O[:, r] @ vf.W[r] - V) <= 1e-14 * np.linalg.norm(V)
    full = Params(rng.standard_normal((6, 6)), V=rng.standard_normal((6, 6)), B=np.eye(6))
    assert value_factors(full).dense == (0,)


def test_coordinates_round_trip_and_symmetric_part(rng):
    from riccati_tf.stability.equilibria.coords import sym_coords

    for d in (1, 2, 7):
        X = rng.standard_normal((d, d))
        S = X + X.T
        h = to_coords(S)
        assert np.allclose(from_coords(h, d), S, rtol=0, atol=1e-14)
        assert np.linalg.norm(h) == pytest.approx(np.linalg.norm(S), rel=1e-14)
        assert np.allclose(sym_coords(X), h, rtol=0, atol=1e-14)


def test_equilibria_beyond_the_dense_spectrum_record_how_stability_was_decided():
    p = low_rank_value_layer(48, 12)
    (eq,) = equilibria(p)
    assert eq.stable and eq.spectral_abscissa is None and eq.residual <= 1e-12
    st = eq.stability
    assert st.method == "numerical-range" and st.value < 0 and st.tolerance > 0
    assert _dense_abscissa(p, eq.cov) <= st.value


@pytest.mark.parametrize("d", [6, 40])
def test_newton_towards_the_zero_equilibrium_stops_at_zero(rng, d, monkeypatch):
    """A Hurwitz layer with small attention: Newton from a small Σ0 heads for Σ* = 0, whose
    relative residual is 0 while that of every Σ ≠ 0 nearby stays O(1). The iteration returns
    the exact zero equilibrium once its iterate is below ZERO_RTOL max|Σ0|, in a few steps
    (without that test the iterates shrank by orders of magnitude per step to about 1e-160,
    13–16 steps, and the iteration then stalled and returned None)."""
    import importlib

    module = importlib.import_module("riccati_tf.stability.equilibria.newton")
    A = matrix_with_spectrum(rng, -rng.uniform(0.4, 1.5, d))
    p = Params(A, heads=[(0.1 * rng.standard_normal((d, d)) / np.sqrt(d),
                          0.1 * rng.standard_normal((d, d)) / np.sqrt(d))])
    S0 = 0.1 * random_pd(rng, d) / d
    steps = []
    original = module.products

    def counted(params, cov):
        steps.append(float(np.abs(cov).max()))
        return original(params, cov)

    monkeypatch.setattr(module, "products", counted)
    got = newton(p, S0)
    assert got is not None
    cov, res, it = got
    assert not np.any(cov) and res == 0.0
    assert it <= 6 and min(steps) >= np.finfo(float).tiny  # no subnormal iterate was formed
    assert np.all(np.abs(F(p, np.zeros((d, d)))) == 0.0)


# ---------------------------------------------------------------- the search: budget, completeness


def _rational(M: np.ndarray):
    import sympy as sp

    return sp.Matrix(M.shape[0], M.shape[1], [sp.Rational(int(x), 8) for x in np.ravel(8 * M)])


def every_equilibrium_d2(p: Params) -> list[np.ndarray]:
    """Every real solution Σ ∈ Sym(2) of F(Σ) = 0 (PSD or not) of a one-head layer with entries
    in Z/8, independently of the package: a lexicographic Gröbner basis of the three entries of
    F (sympy, exact rationals) in shape position [a − f(b, c), b − g(c), h(c)], the real roots
    of h to 40 digits, back-substituted."""
    import sympy as sp

    a, b, c = sp.symbols("a b c")
    S = sp.Matrix([[a, b], [b, c]])
    (V, B), = p.heads
    A, V, B = _rational(p.A), _rational(V), _rational(B)
    Fm = A * S + S * A.T + V * S * B * S + S * B.T * S * V.T
    g = sp.groebner([sp.expand(Fm[0, 0]), sp.expand(Fm[0, 1]), sp.expand(Fm[1, 1])], a, b, c,
                    order="lex").exprs
    assert len(g) == 3 and sp.degree(g[0], a) == 1 and sp.degree(g[1], b) == 1
    assert not g[1].has(a) and not g[2].has(a) and not g[2].has(b)  # shape position
    out = []
    for r in sp.Poly(g[2], c).nroots(n=40, maxsteps=200):
        if abs(sp.im(r)) > 1e-30:
            continue
        r = sp.re(r)
        bv = sp.solve(g[1].subs(c, r), b)[0]
        av = sp.solve(g[0].subs({c: r, b: bv}), a)[0]
        out.append(np.array([[float(av), float(bv)], [float(bv), float(r)]]))
    return out


def psd_only(covs: list[np.ndarray]) -> list[np.ndarray]:
    return [X for X in covs if np.linalg.eigvalsh(X)[0] >= -1e-9 * max(1.0, np.abs(X).max())]


def matches(found, every) -> bool:
    """Each equilibrium found is one of `every`, distinct ones distinct ones."""
    hits = [min(range(len(every)), key=lambda k: np.linalg.norm(every[k] - e.cov)) for e in found]
    return len(set(hits)) == len(hits) and all(
        np.linalg.norm(every[k] - e.cov) <= 1e-8 * max(1.0, np.linalg.norm(every[k]))
        for k, e in zip(hits, found, strict=True))


def rational_layer(seed: int, scalar: bool) -> Params:
    rng = np.random.default_rng(seed)
    A, V, B = (np.round(8 * rng.standard_normal((2, 2))) / 8 for _ in range(3))
    return Params(A, B=B, V=V[0, 0] * np.eye(2) if scalar else V)


def test_general_V_search_is_never_called_complete_and_it_does_miss_equilibria():
    """On d = 2 layers whose equilibria sympy lists exactly, every equilibrium that the search
    finds is one of them, the flag says "not known complete" throughout, and on some layers the
    search misses covariance equilibria (so the flag must not say complete)."""
    from riccati_tf.stability.equilibria import equilibrium_search

    missed = 0
    for seed in range(8):
        p = rational_layer(seed, scalar=False)
        every = psd_only(every_equilibrium_d2(p))
        r = equilibrium_search(p, which="all")
        assert not r.undetermined and not r.complete
        assert "nothing proves" in r.reason
        assert matches(r.equilibria, every)
        missed += len(every) - len(r.equilibria)
    assert missed > 0


def test_scalar_V_enumeration_is_complete_against_sympy():
    """Scalar V: the flag says complete, and the list is exactly the PSD solutions of F = 0."""
    from riccati_tf.stability.equilibria import equilibrium_search

    for seed in (0, 1, 2, 3, 5, 6, 7, 8):  # seed 4: λ(A) = ±√3/4, refused (not isolated)
        p = rational_layer(seed, scalar=True)
        every = psd_only(every_equilibrium_d2(p))
        r = equilibrium_search(p, which="all")
        assert r.complete and not r.undetermined and "every invariant subspace" in r.reason
        assert len(r.equilibria) == len(every) and matches(r.equilibria, every)
        stable = equilibrium_search(p)
        assert stable.complete
        assert [e.stable for e in r.equilibria].count(True) == len(stable.equilibria)


def test_no_equilibrium_is_stable_when_A_is_zero(rng):
    """A = 0: F(cΣ) = c²F(Σ), so L(Σ*) = 2F(Σ*) = 0; "stable" is empty and complete, and every
    equilibrium the full search finds has a singular L (dense spectrum)."""
    from riccati_tf.stability.equilibria import equilibrium_search

    d = 3
    p = Params(np.zeros((d, d)), V=rng.standard_normal((d, d)), B=rng.standard_normal((d, d)))
    r = equilibrium_search(p)
    assert r.equilibria == () and r.complete and "A = 0" in r.reason
    assert r.spent.newton_iterations == 0
    for e in equilibrium_search(p, which="all").equilibria:
        L = linearization_matrix(p, e.cov)
        assert np.min(np.abs(np.linalg.eigvals(L))) <= 1e-8 * max(1.0, np.linalg.norm(L))


def test_a_spent_budget_makes_the_search_undetermined():
    from riccati_tf.stability.equilibria import (
        DEFAULT_BUDGET,
        EquilibriaUndetermined,
        SearchBudget,
        equilibrium_search,
    )

    V = -np.array([[1.0, 0.3], [0.0, 1.0]])
    p = Params(np.diag([1.0, 5.0]), B=0.5 * np.eye(2), V=V)
    small = SearchBudget(newton_iterations=3, seconds=None)
    r = equilibrium_search(p, budget=small)
    assert r.undetermined and not r.complete and r.budget == small
    assert "3 Newton iterations are spent" in r.reason
    assert r.spent.newton_iterations == 4  # the one that went over is counted
    with pytest.raises(EquilibriaUndetermined, match="undetermined") as info:
        equilibria(p, budget=small)
    assert info.value.search.undetermined and isinstance(info.value, SolverError)
    full = equilibrium_search(p)  # the default budget is ample
    assert not full.undetermined and len(full.equilibria) == 1
    assert 0 < full.spent.newton_iterations <= DEFAULT_BUDGET.newton_iterations
    assert full.spent.seconds < DEFAULT_BUDGET.seconds
    late = equilibrium_search(Params(np.diag([1.0, 6.0]), B=0.5 * np.eye(2), V=V),
                              budget=SearchBudget(seconds=1e-9))
    assert late.undetermined and "1e-09 seconds are spent" in late.reason


def test_the_lyapunov_budget_of_newton_krylov():
    from riccati_tf.stability.equilibria import SearchBudget, equilibrium_search

    p = low_rank_value_layer(36, 12, seed=7)
    r = equilibrium_search(p, budget=SearchBudget(lyapunov_solves=10))
    assert r.undetermined and "10 Lyapunov solves are spent" in r.reason
    assert r.spent.lyapunov_solves == 11
    full = equilibrium_search(p)
    assert not full.undetermined and full.spent.lyapunov_solves > 10
    (eq,) = full.equilibria
    assert eq.stable and eq.residual <= 1e-12


def test_progress_is_reported_after_each_start():
    from riccati_tf.stability.equilibria import equilibrium_search

    V = -np.array([[1.0, 0.1], [0.0, 1.0]])
    p = Params(np.diag([1.0, 2.5]), B=0.5 * np.eye(2), V=V)
    calls = []
    equilibrium_search(p, starts=[np.eye(2)], progress=lambda i, n: calls.append((i, n)))
    assert calls == [(i, 4) for i in range(1, 5)]  # zero, continuation, the start, the flow
    calls.clear()
    equilibria(p, which="all", progress=lambda i, n: calls.append((i, n)))
    assert calls == [(i, 7) for i in range(1, 8)]  # and four random starts


@pytest.mark.parametrize("bad", [0, -1, 2.5, "5", None, True])
def test_search_budget_and_progress_are_validated(bad):
    from riccati_tf.stability.equilibria import SearchBudget

    with pytest.raises(InvalidInputError, match="newton_iterations"):
        SearchBudget(newton_iterations=bad)
    if bad != 0:
        with pytest.raises(InvalidInputError, match="lyapunov_solves"):
            SearchBudget(lyapunov_solves=bad)
    if bad is not None and bad != 2.5:
        with pytest.raises(InvalidInputError, match="seconds"):
            SearchBudget(seconds=bad)
    p = Params(np.diag([1.0, 2.0]), B=np.eye(2), V=-np.array([[1.0, 0.1], [0.0, 1.0]]))
    with pytest.raises(InvalidInputError, match="budget must be a SearchBudget"):
        equilibria(p, budget={"seconds": 1.0})
    if bad is not None:
        with pytest.raises(InvalidInputError, match="progress must be"):
            equilibria(p, progress=bad)


@pytest.mark.parametrize("scale", [1.0, 1e19])
def test_a_layer_of_subnormal_rates_is_answered_within_the_settling_budget(scale):
    """A hostile layer (A of order 1e-319 · scale, heads of 1e-40 to 1e-208): the settling
    run's horizon SETTLE_HORIZON / rate is not a finite float. Its RK45 steps were rejected
    hundreds of times each, without end, until the search's 60-second budget stopped it
    ("undetermined", about 3·10⁶ right-hand sides); now it ends at once and the search answers
    within a few settling budgets of right-hand sides."""
    A = scale * np.array([[-2.98673e-319, -2.98673e-319], [-2.754e-319, -5.32e-321]])
    V = np.array([[6.497138568536022e-208, -1.8792964400901555e-81],
                  [2.3209760151828378e-52, 2.0080960902435897e-51]])
    B = np.array([[-7.228336645570919e-40, -0.0],
                  [-3.3301975449385576e-40, -9.704132693661695e-40]])
    result = equilibrium_search(Params(A, heads=[(V, B)]))
    assert not result.undetermined
    assert result.spent.rhs_evaluations <= 4 * SETTLE_RHS_BUDGET
