"""The batched scalar-V classifier against `certify` case by case, and its stacked numerics."""

from dataclasses import replace

import numpy as np
import pytest
from scipy.linalg import expm

from riccati_tf import Gaussian, Params, flow
from riccati_tf.flows.exact import van_loan
from riccati_tf.stability.certificates import (
    EXACT_MAX_D,
    certify,
    default_tolerance,
    premises,
    theorem_of,
)
from riccati_tf.stability.equilibria import KRONECKER_MAX_D
from riccati_tf.sweep.batched import blowup as batched_blowup
from riccati_tf.sweep.batched import blowup_times, classify_scalar
from riccati_tf.sweep.batched import classify as batched_classify
from riccati_tf.sweep.batched import constants as batched_constants
from riccati_tf.sweep.batched import margins as batched_margins
from riccati_tf.sweep.batched.classify import _lyapunov_certified, _numerical_stack
from riccati_tf.sweep.batched.heads import (
    g_matrix,
    g_rounding,
    quadratic_constants,
    scalar_values,
)
from riccati_tf.sweep.batched.margins import _eigen_discs
from riccati_tf.sweep.batched.stack import expm_stack, lyapunov_stack, van_loan_stack
from riccati_tf.sweep.family import Chunk
from riccati_tf.sweep.runner import certify_columns

THEOREMS = {"zero", "psd_hurwitz", "psd_gramian_pd", "psd_gramian_singular",
            "nsd_unstable_range", "nsd_threshold"}


def random_chunk(rng, n, d, heads=1):
    """Scalar-V layers built to reach every branch: A random / Hurwitz / anti-stable / one
    Jordan block; B ±SPD, ±rank one, indefinite or skew (G = 0); Σ0 full rank, rank one, rank one
    on a stable eigenvector of A, or 0."""
    A = rng.standard_normal((n, d, d)) / np.sqrt(d)
    kind = rng.integers(0, 4, n)
    shift = np.abs(np.linalg.eigvals(A).real).max(axis=1) + rng.uniform(0.05, 0.5, n)
    A[kind == 1] -= shift[kind == 1, None, None] * np.eye(d)
    A[kind == 2] += shift[kind == 2, None, None] * np.eye(d)
    jordan = rng.choice([-1.0, 1.0], n)[:, None, None] * shift[:, None, None] * np.eye(d)
    A[kind == 3] = (jordan + np.eye(d, k=1))[kind == 3]  # one Jordan block (defective)
    Vs, Bs = [], []
    for _ in range(heads):
        X = rng.standard_normal((n, d, d))
        u = rng.standard_normal((n, d, 1))
        skew = rng.standard_normal((n, d, d))
        choices = [X @ np.swapaxes(X, 1, 2) / d, u @ np.swapaxes(u, 1, 2),
                   rng.standard_normal((n, d, d)), skew - np.swapaxes(skew, 1, 2)]
        pick = rng.integers(0, 4, n)
        sign = rng.choice([-1.0, 1.0], n)[:, None, None]
        Bs.append(sign * np.choose(pick[:, None, None], choices))
        v = rng.uniform(0.2, 1.0, n) * (1.0 if heads == 1 else rng.choice([-1.0, 1.0], n))
        Vs.append(v[:, None, None] * np.eye(d))
    X = rng.standard_normal((n, d, d))
    cov = X @ np.swapaxes(X, 1, 2) / d
    ck = rng.integers(0, 6, n)
    w = rng.standard_normal((n, d, 1))
    cov[ck == 3] = (w @ np.swapaxes(w, 1, 2))[ck == 3]
    eig, vec = np.linalg.eig(A)
    for i in np.flatnonzero(ck == 4):
        real_stable = np.flatnonzero((eig[i].real < 0) & (eig[i].imag == 0))
        if real_stable.size:
            e = vec[i][:, real_stable[0]].real
            cov[i] = rng.uniform(0.2, 3.0) * np.outer(e, e)
    cov[ck == 5] = 0.0
    cov = 0.5 * (cov + np.swapaxes(cov, 1, 2))
    ids = np.arange(n)
    return Chunk(0, ids, {"i": ids.astype(float)}, A, tuple(Vs), tuple(Bs), np.zeros((n, d)),
                 rng.standard_normal((n, d)), cov)


VERDICT = ("regime", "theorem", "exact", "global")
NUMBERS = ("rate", "blowup_time", "threshold")


@pytest.mark.parametrize("d, heads, n", [(2, 1, 240), (3, 2, 160)])
def test_batched_classification_is_certify_case_by_case(d, heads, n):
    chunk = random_chunk(np.random.default_rng(100 * d + heads), n, d, heads)
    mask, v = scalar_values(chunk.V)
    assert mask.all()
    res = classify_scalar(chunk.A, g_matrix(v, chunk.B), chunk.cov, heads=(chunk.V, chunk.B))
    handled = np.flatnonzero(res.handled)
    assert set(res.theorem[handled]) == THEOREMS  # every theorem branch is exercised
    assert handled.size > 0.4 * n and np.isfinite(res.blowup_time).sum() > 10
    ref = certify_columns(chunk, batched=False)  # `certify`, layer by layer, for every case
    columns = {"regime": res.regime, "theorem": res.theorem, "exact": res.exact,
               "global": res.global_, "rate": res.rate, "blowup_time": res.blowup_time,
               "threshold": res.threshold}
    for name in VERDICT:
        assert list(columns[name][handled]) == list(ref[name][handled]), name
    for name in NUMBERS:
        np.testing.assert_allclose(columns[name][handled], ref[name][handled], rtol=1e-11,
                                   atol=0, err_msg=name)
    # no verdict that certify reaches by an exactly decided theorem is left to it
    rest = np.flatnonzero(~res.handled)
    assert not np.any(ref["exact"][rest])
    # the sweep's own path (without the heads: fewer batched cases) agrees on every case
    got = certify_columns(chunk)
    for name in VERDICT:
        assert list(got[name]) == list(ref[name]), name
    for name in NUMBERS:
        np.testing.assert_allclose(got[name], ref[name], rtol=1e-11, atol=0, err_msg=name)


def test_numerical_premises_beyond_exact_max_d_are_certify_case_by_case():
    """d = 8 > EXACT_MAX_D: certify decides the premises with tolerances (exact False); the
    sweep passes the heads, so the batched classifier uses those premises case by case."""
    chunk = random_chunk(np.random.default_rng(808), 40, 8)
    ref = certify_columns(chunk, batched=False)
    got = certify_columns(chunk)
    for name in VERDICT:
        assert list(got[name]) == list(ref[name]), name
    for name in NUMBERS:
        np.testing.assert_allclose(got[name], ref[name], rtol=1e-11, atol=0, err_msg=name)
    batched = got["path"] == "batched"
    assert not np.any(got["exact"][batched & (got["theorem"] != "zero")])
    # an unobservable unstable mode ("psd_gramian_singular") sits on G's kernel, where G ∓ δI
    # disagree beyond EXACT_MAX_D: certify decides it by the closed form, and so does the sweep
    assert {"nsd_unstable_range", "psd_hurwitz"} <= set(got["theorem"][batched])
    assert "psd_gramian_singular" not in set(got["theorem"])
    assert np.isfinite(got["blowup_time"][batched]).sum() >= 2


def ensemble_chunk(d, n, stable=False):
    """The d-dimensional ensemble of benchmarks/sweep.py (e), or its part with a ≤ −0.1."""
    from benchmarks.sweep import ensemble_d
    from riccati_tf.sweep import parse_family

    spec = ensemble_d(d, n)
    if stable:
        spec["family"]["random"]["axes"]["a"] = {"uniform": [-1.5, -0.1]}
    return parse_family(spec).chunk(0)


def stacked_premises(chunk):
    """(`_numerical_stack`'s premises, certify's `premises` case by case) for a chunk."""
    d = chunk.A.shape[-1]
    _, v = scalar_values(chunk.V)
    G = g_matrix(v, chunk.B)
    p0 = Params(A=chunk.A[0], heads=[(V[0], B[0]) for V, B in zip(chunk.V, chunk.B, strict=True)])
    got = _numerical_stack(chunk.A, G, chunk.cov, g_rounding(chunk.V, chunk.B),
                           np.linalg.eigvalsh(G), _eigen_discs(chunk.A), default_tolerance(p0))
    ref = [premises(chunk.params(i), chunk.cov[i]) for i in range(len(chunk))]
    assert d > EXACT_MAX_D and not any(pr.exact for pr in ref)
    return got, ref


@pytest.mark.parametrize("d, kind", [(8, "random"), (8, "ensemble"), (12, "ensemble")])
def test_numerical_premises_on_the_stack_are_certify_premises(d, kind):
    chunk = random_chunk(np.random.default_rng(d), 60, d) if kind == "random" else \
        ensemble_chunk(d, 60)
    got, ref = stacked_premises(chunk)
    decided = [i for i, pr in enumerate(got) if pr is not None]
    assert len(decided) >= (20 if kind == "random" else 55)
    for i in decided:
        a, b = got[i], ref[i]
        assert replace(a, threshold=None) == replace(b, threshold=None), i
        assert (a.threshold is None) == (b.threshold is None)
        if a.threshold is not None:
            assert abs(a.threshold - b.threshold) <= 1e-12 * b.threshold
    theorems = {theorem_of(got[i], d) for i in decided}
    assert {("psd_hurwitz", "collapses"), ("psd_gramian_pd", "converges")} <= theorems
    if kind == "ensemble":
        assert ("nsd_unstable_range", "blows_up") in theorems
        assert ("nsd_threshold", "collapses") in theorems


@pytest.mark.parametrize("d, stable", [(8, False), (8, True), (32, False)])
def test_benchmark_ensemble_beyond_exact_max_d_is_batched(d, stable):
    """(e)'s ensembles on the batched path (numerical premises on the stack, collapses and
    convergence with certify's local certificate at Σ* where its conditioning allows), with
    certify's verdicts."""
    chunk = ensemble_chunk(d, 40 if d < 32 else 16, stable)
    got, ref = certify_columns(chunk), certify_columns(chunk, batched=False)
    for name in VERDICT:
        assert list(got[name]) == list(ref[name]), name
    for name in NUMBERS:
        np.testing.assert_allclose(got[name], ref[name], rtol=1e-11, atol=0, err_msg=name)
    share = np.mean(got["path"] == "batched")
    assert share == 1.0 if (stable or d > KRONECKER_MAX_D) else share >= 0.95


def test_zero_certified_means_certify_ships_the_local_certificate(rng):
    n, d = 12, 8
    A = rng.standard_normal((n, d, d)) / np.sqrt(d) - 1.5 * np.eye(d)
    A[-2] = -np.eye(d) + 1e4 * np.eye(d, k=1)  # κ(V) beyond every margin
    A[-1] = np.eye(d)  # not Hurwitz
    ok = _lyapunov_certified(A, _eigen_discs(A), np.linalg.norm(A, 2, axis=(1, 2)))
    assert list(ok) == [True] * (n - 2) + [False, False]
    for i in np.flatnonzero(ok):
        c = certify(Params(A=A[i], B=np.eye(d), V=-np.eye(d)), np.eye(d))  # G = 2I ≻ 0
        assert (c.regime, c.theorem, c.exact) == ("collapses", "psd_hurwitz", False)
        assert c.lyapunov is not None and c.check()


def rounding_level_chunk():
    """Layers whose premises hold only up to rounding, or at extreme magnitudes: fl(wwᵀ)
    covariances, rank-one and cancelling G, v = ±1e-300, tiny Σ0, A next to iℝ or defective."""
    w, u = np.array([0.3, 0.7]), np.array([1.1, -0.4])
    ww, uu = np.outer(w, w), np.outer(u, u)
    I = np.eye(2)
    hurwitz, anti = np.array([[-1.0, 0.3], [0.0, -0.4]]), np.array([[0.8, 0.3], [-0.2, 0.5]])
    rows = [  # (A, [(v, B), ...], Σ0)
        (hurwitz, [(1.0, I)], ww), (anti, [(1.0, I)], ww), (anti, [(-1.0, I)], 3.0 * ww),
        (hurwitz, [(1.0, uu)], I), (anti, [(-1.0, uu)], I), (anti, [(1.0, -uu)], I),
        (anti, [(-1e-300, I)], I), (anti, [(1e-300, I)], I), (hurwitz, [(1e300, I)], I),
        (anti, [(1.0, I)], 1e-300 * I), (anti, [(1.0, I)], 1e-310 * I),
        (hurwitz, [(1.0, I)], 1e300 * I),
        (np.diag([1e-17, -1.0]), [(-1.0, I)], I), (np.diag([1e-17, -1.0]), [(1.0, I)], I),
        (np.array([[0.5, 1.0], [0.0, 0.5]]), [(-1.0, I)], I),
        (np.array([[-0.5, 1.0], [-1e-20, -0.5]]), [(1.0, I)], I),
        (anti, [(0.1, I), (0.1, -I + 1e-17 * uu)], I), (hurwitz, [(0.3, uu), (0.3, -uu)], I),
        (hurwitz, [(1.0, I)], np.array([[1.0, 1.0], [1.0, 1.0]])), (anti, [(0.0, I)], I),
    ]
    n = len(rows)
    H = max(len(r[1]) for r in rows)
    A = np.array([r[0] for r in rows])
    V = tuple(np.array([r[1][h][0] * I if h < len(r[1]) else 0 * I for r in rows])
              for h in range(H))
    B = tuple(np.array([r[1][h][1] if h < len(r[1]) else 0 * I for r in rows])
              for h in range(H))
    ids = np.arange(n)
    return Chunk(0, ids, {"i": ids.astype(float)}, A, V, B, np.zeros((n, 2)), np.zeros((n, 2)),
                 np.array([r[2] for r in rows]))


def test_rounding_level_data_gets_certify_verdicts():
    chunk = rounding_level_chunk()
    ref = certify_columns(chunk, batched=False)
    _, v = scalar_values(chunk.V)
    res = classify_scalar(chunk.A, g_matrix(v, chunk.B), chunk.cov, heads=(chunk.V, chunk.B))
    columns = {"regime": res.regime, "theorem": res.theorem, "exact": res.exact,
               "global": res.global_, "rate": res.rate, "blowup_time": res.blowup_time,
               "threshold": res.threshold}
    for got in (columns, certify_columns(chunk)):
        keep = res.handled if got is columns else np.ones(len(chunk), dtype=bool)
        for name in VERDICT:
            assert list(got[name][keep]) == list(ref[name][keep]), name
        for name in NUMBERS:
            np.testing.assert_allclose(got[name][keep], ref[name][keep], rtol=1e-11, atol=0,
                                       err_msg=name)
    assert res.handled.sum() >= 10


def test_certify_columns_merges_batched_and_per_case_rows():
    chunk = random_chunk(np.random.default_rng(7), 40, 2)
    _, v = scalar_values(chunk.V)
    res = classify_scalar(chunk.A, g_matrix(v, chunk.B), chunk.cov,
                          quadratic_constants(chunk.V, chunk.B))  # the runner's call
    got = certify_columns(chunk)
    assert list(got["path"]) == ["batched" if h else "certify" for h in res.handled]
    assert list(got["regime"][res.handled]) == list(res.regime[res.handled])
    from riccati_tf.stability.certificates import REGIMES

    assert set(got["regime"]) <= set(REGIMES)


def test_non_scalar_values_go_to_certify():
    chunk = random_chunk(np.random.default_rng(5), 30, 2)
    V, cov = chunk.V[0].copy(), chunk.cov.copy()
    V[:10, 0, 1] = 0.3  # not V = vI: certify's general-V path ...
    cov[:10] = 0.0  # ... which answers Σ0 = 0 at once (general V integrates for long)
    chunk = Chunk(0, chunk.ids, chunk.values, chunk.A, (V,), chunk.B, chunk.b, chunk.mean, cov)
    mask, _ = scalar_values(chunk.V)
    assert not mask[:10].any() and mask[10:].all()
    got = certify_columns(chunk)
    assert set(got["path"][:10]) == {"certify"} and set(got["theorem"][:10]) == {"zero"}
    assert "batched" in set(got["path"][10:])
    for i in range(10):
        assert chunk.params(i).value_scalars is None


def test_g_matrix_is_params_g():
    chunk = random_chunk(np.random.default_rng(2), 20, 3, heads=2)
    _, v = scalar_values(chunk.V)
    G = g_matrix(v, chunk.B)
    for i in range(20):
        np.testing.assert_array_equal(G[i], chunk.params(i).G)


def test_expm_and_van_loan_stacks_match_scipy(rng):
    X = rng.standard_normal((50, 4, 4)) * rng.uniform(0.01, 30, 50)[:, None, None]
    ref = np.array([expm(x) for x in X])
    np.testing.assert_allclose(expm_stack(X), ref, rtol=1e-11 * 10, atol=1e-13 * np.abs(ref).max())
    A, G = rng.standard_normal((20, 3, 3)), rng.standard_normal((20, 3, 3))
    G = G + np.swapaxes(G, 1, 2)
    s = rng.uniform(0.1, 1.0, 20)
    E, W = van_loan_stack(A, G, s)
    for i in range(20):
        E1, W1 = van_loan(A[i], G[i], s[i])
        np.testing.assert_allclose(E[i], E1, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(W[i], W1, rtol=1e-11, atol=1e-13)


def test_lyapunov_stack_residual(rng):
    T = rng.standard_normal((40, 3, 3)) - 3 * np.eye(3)
    C = rng.standard_normal((40, 3, 3))
    C = C + np.swapaxes(C, 1, 2)
    P = lyapunov_stack(T, C)
    res = np.swapaxes(T, 1, 2) @ P + P @ T - C
    assert np.abs(res).max() <= 1e-12 * np.abs(C).max()


@pytest.mark.parametrize("k", [1, 2, 8, 32])
def test_lyapunov_stack_is_bartels_stewart(rng, k):
    from scipy.linalg import solve_continuous_lyapunov

    n = 30
    T = rng.standard_normal((n, k, k)) / np.sqrt(k) - rng.uniform(0.5, 3.0, n)[:, None, None] \
        * np.eye(k)
    C = rng.standard_normal((n, 2, k, k))
    C = C + np.swapaxes(C, -1, -2)
    P = lyapunov_stack(T, C)  # two right-hand sides per case
    for i in range(n):
        for j in range(2):
            res = T[i].T @ P[i, j] + P[i, j] @ T[i] - C[i, j]  # backward stable
            scale = 2 * np.linalg.norm(T[i]) * np.linalg.norm(P[i, j]) + np.linalg.norm(C[i, j])
            assert np.linalg.norm(res) <= 1e-14 * k * scale
            ref = solve_continuous_lyapunov(T[i].T, C[i, j])
            np.testing.assert_allclose(P[i, j], ref, rtol=0, atol=1e-10 * np.abs(ref).max())


def test_lyapunov_stack_defective_and_singular_cases():
    jordan = np.array([[-1.0, 1e3], [0.0, -1.0 - 1e-12]])  # eigenbasis κ ≈ 1e15: scipy's solver
    zero = np.zeros((2, 2))  # λ_i + λ_j = 0: no solution is returned
    axis = np.array([[0.0, 1.0], [-1.0, 0.0]])  # λ = ±i: λ_1 + λ_2 = 0
    T = np.array([jordan, zero, axis, [[np.nan, 0.0], [0.0, -1.0]]])
    C = np.broadcast_to(np.eye(2), T.shape).copy()
    P = lyapunov_stack(T, C)
    res = jordan.T @ P[0] + P[0] @ jordan - np.eye(2)
    assert np.abs(res).max() <= 1e-12 * np.abs(P[0]).max()
    assert np.isnan(P[1:]).all()


@pytest.mark.parametrize("d", [2, 5])
def test_blowup_times_match_the_exact_flow(rng, d):
    n = 25
    A = rng.standard_normal((n, d, d))
    X = rng.standard_normal((n, d, d))
    G = -(X @ np.swapaxes(X, 1, 2))  # G ≺ 0
    Y = rng.standard_normal((n, d, d))
    cov = Y @ np.swapaxes(Y, 1, 2)
    e, vec = np.linalg.eigh(cov)
    L = vec * np.sqrt(e)[:, None, :]
    T = blowup_times(A, G, L, np.full(n, 1e6))
    assert np.all(np.isnan(blowup_times(A, G, L, 0.5 * T)))  # beyond t_max: not reported
    for i in range(n):
        B = -0.5 * G[i]  # V = I, so G = −(B + Bᵀ)
        tr = flow(Params(A=A[i], B=B, V=np.eye(d)), Gaussian(np.zeros(d), cov[i]),
                  max(2 * T[i], 1.0) if np.isfinite(T[i]) else 50.0, method="exact")
        assert tr.blowup_time is not None
        assert abs(T[i] - tr.blowup_time) <= 1e-11 * tr.blowup_time


def test_threshold_is_decided_exactly_or_left_to_certify():
    # σ̇ = 2aσ + 2vbσ² with a = −1, v = b = 1: blow-up iff σ0 > 1 (λ_max(W∞Σ0) = σ0), at
    # T* = ½ ln(σ0 / (σ0 − 1)); σ0 = 1 exactly is the borderline (certify: undetermined)
    sigma = np.array([0.5, 1.0, 1.0 + 1e-10, 1.0 + 1e-4, 2.0])
    n = sigma.size
    A, V, B = (np.full((n, 1, 1), x) for x in (-1.0, 1.0, 1.0))
    res = classify_scalar(A, np.full((n, 1, 1), -2.0), sigma[:, None, None],
                          heads=((V,), (B,)))
    assert list(res.regime[[0, 1, 3, 4]]) == ["collapses", "undetermined", "blows_up",
                                               "blows_up"]
    assert list(res.exact[[0, 1, 3, 4]]) == [True, False, True, True]
    np.testing.assert_allclose(res.threshold[[0, 1, 3, 4]], sigma[[0, 1, 3, 4]], rtol=1e-14)
    for i in (3, 4):
        s = sigma[i]
        np.testing.assert_allclose(res.blowup_time[i], 0.5 * np.log(s / (s - 1)), rtol=1e-9)
    # 1 + 1e-10 exceeds 1 exactly, but T* is too flat for certify's own check to confirm
    ids = np.arange(n)
    chunk = Chunk(0, ids, {"i": ids.astype(float)}, A, (V,), (B,), np.zeros((n, 1)),
                  np.zeros((n, 1)), sigma[:, None, None])
    ref = certify_columns(chunk, batched=False)
    for i in np.flatnonzero(res.handled):
        assert (res.regime[i], res.exact[i]) == (ref["regime"][i], ref["exact"][i])
    assert list(certify_columns(chunk)["regime"]) == list(ref["regime"])


@pytest.mark.parametrize("n", [pytest.param(1_000, marks=pytest.mark.slow),
                               pytest.param(10_000, marks=pytest.mark.long)])
def test_benchmark_family_is_certify_everywhere(n):
    """Must-show 1 without the timing: the random family of benchmarks/sweep.py, batched and
    case by case, on 1 000 configurations (make test) and on the benchmark's 10 000 (make
    test-long)."""
    from benchmarks.sweep import classify_all, compare, ensemble
    from riccati_tf.sweep import parse_family

    family = parse_family(ensemble(n))
    got, ref = classify_all(family, True), classify_all(family, False)
    assert np.all(got["path"] == "batched")
    n_diff, worst = compare(got, ref)
    assert n_diff == 0 and worst <= 1e-11


@pytest.mark.parametrize("seed", [0, 4])
def test_blowup_root_search_converges_quadratically(seed, monkeypatch):
    # the Newton iteration steps from whichever bracket end has the smaller |λ_min|: an iterate
    # that lands on the root to rounding from the positive side ends the search, instead of
    # leaving the far end to be bisected towards it (these two ensembles took 44 and 52 stacked
    # exponentials that way, against 10 now)
    rng = np.random.default_rng(seed)
    n, d = 300, 4
    A = rng.standard_normal((n, d, d)) / np.sqrt(d) - 0.3 * np.eye(d)
    X = rng.standard_normal((n, d, d))
    G = -(X @ np.swapaxes(X, 1, 2)) / d
    Y = rng.standard_normal((n, d, d))
    cov = Y @ np.swapaxes(Y, 1, 2) / d
    e, vec = np.linalg.eigh(cov)
    L = vec * np.sqrt(e)[:, None, :]
    calls = []
    original = batched_blowup.van_loan_stack

    def counted(A_, G_, s):
        calls.append(A_.shape[0])
        return original(A_, G_, s)

    monkeypatch.setattr(batched_blowup, "van_loan_stack", counted)
    T = blowup_times(A, G, L, np.full(n, 1e6))
    assert np.isfinite(T).sum() > n // 2
    assert len(calls) <= 14, calls  # the march, then a few Newton rounds
    monkeypatch.setattr(batched_blowup, "van_loan_stack", original)
    for i in range(0, n, 20):  # the roots themselves, against the exact flow's Brent search
        tr = flow(Params(A=A[i], B=-0.5 * G[i], V=np.eye(d)), Gaussian(np.zeros(d), cov[i]),
                  2 * T[i] if np.isfinite(T[i]) else 100.0, method="exact")
        if np.isfinite(T[i]):
            assert abs(T[i] - tr.blowup_time) <= 1e-11 * tr.blowup_time
        else:
            assert tr.blowup_time is None


def _blowup_ensemble(rng, n, d, skew):
    """n layers with G ≺ 0 and Σ0 ≻ 0, A = N/√d − 0.1I + skew·(strictly upper triangular): the
    larger skew, the worse conditioned A's eigenvectors."""
    A = rng.standard_normal((n, d, d)) / np.sqrt(d) - 0.1 * np.eye(d)
    A = A + skew * np.triu(rng.standard_normal((n, d, d)), 1)
    X = rng.standard_normal((n, d, d))
    G = -(X @ np.swapaxes(X, 1, 2)) / d
    Y = rng.standard_normal((n, d, d))
    e, vec = np.linalg.eigh(Y @ np.swapaxes(Y, 1, 2) / d)
    return A, G, vec * np.sqrt(e)[:, None, :]


@pytest.mark.parametrize("d, skew", [(3, 0.0), (8, 1.0), (16, 6.0)])
def test_blowup_roots_on_the_eigen_form_match_stacked_pade(d, skew):
    # the root in the last step by the eigen form LᵀW(t)L = Yᵀ(H ∘ F(t))Y, finished by one
    # Newton step on the Padé form, against the same search with every case forced onto stacked
    # Padé exponentials (κ₂(X) up to ~800 here): the same roots to rounding (the eigen form
    # alone differs by up to ~1e-13), the same cases without a root
    rng = np.random.default_rng(d)
    A, G, L = _blowup_ensemble(rng, 60, d, skew)
    t_max = np.full(A.shape[0], 1e3)
    discs = batched_margins._eigen_discs(A)
    gram = batched_blowup._EigenGramian(G, L, discs)
    T = batched_blowup._blowup_times(A, G, L, t_max, gram)
    pade = batched_blowup._EigenGramian(G, L, discs)
    pade.usable = np.zeros_like(pade.usable)
    T_pade = batched_blowup._blowup_times(A, G, L, t_max, pade)
    assert gram.usable.sum() >= 40 and np.isfinite(T).sum() >= 20
    np.testing.assert_array_equal(np.isnan(T), np.isnan(T_pade))
    ok = np.isfinite(T)
    rel = np.abs(T[ok] - T_pade[ok]) / T_pade[ok]
    assert np.all(rel <= 8 * np.finfo(float).eps), rel.max()


def test_blowup_roots_of_a_defective_drift_use_stacked_pade():
    # A = Jordan block (κ₂(X) = ∞ to working precision): the eigen form is not used, and T*
    # is still the exact flow's
    d = 4
    A = (-0.2 * np.eye(d) + np.diag(np.ones(d - 1), 1))[None]
    G = -np.eye(d)[None]
    L = np.eye(d)[None]
    gram = batched_blowup._EigenGramian(G, L, batched_margins._eigen_discs(A))
    assert not gram.usable[0]
    T = blowup_times(A, G, L, np.array([1e3]))
    tr = flow(Params(A=A[0], B=0.5 * np.eye(d), V=np.eye(d)), Gaussian(np.zeros(d), np.eye(d)),
              2 * T[0], method="exact")
    assert abs(T[0] - tr.blowup_time) <= 1e-11 * tr.blowup_time


def test_eigen_form_newton_converges_quadratically(monkeypatch):
    # the eigen-form Newton iteration from the one-step bracket: a handful of stacked
    # evaluations, not a bisection's ~50
    rng = np.random.default_rng(5)
    A, G, L = _blowup_ensemble(rng, 300, 4, 0.0)
    calls = []
    original = batched_blowup._EigenGramian.at

    def counted(self, idx, t):
        calls.append(idx.size)
        return original(self, idx, t)

    monkeypatch.setattr(batched_blowup._EigenGramian, "at", counted)
    T = blowup_times(A, G, L, np.full(A.shape[0], 1e6))
    assert np.isfinite(T).sum() > 100
    assert len(calls) <= 14 and sum(calls) <= 9 * np.isfinite(T).sum(), calls


@pytest.mark.parametrize("d, skew", [(8, 1.0), (32, 10.0)])
def test_blowup_check_on_the_eigen_form_matches_certify_stepping(d, skew):
    # λ_min(I + L0ᵀW(t)L0) at T*(1 ± BLOWUP_CHECK_RTOL) on the eigen form against certify's
    # stepping (W by Van Loan steps ‖A‖h ≤ 1): they differ by far less than CHECK_MARGIN, so the
    # stacked check decides as certify's own check would
    rng = np.random.default_rng(d)
    A, G, L = _blowup_ensemble(rng, 60, d, skew)
    discs = batched_margins._eigen_discs(A)
    gram = batched_blowup._EigenGramian(G, L, discs)
    T = batched_blowup._blowup_times(A, G, L, np.full(A.shape[0], 1e3), gram)
    ok = np.flatnonzero(np.isfinite(T) & gram.usable)
    assert ok.size >= 40 and discs.cond[ok].max() > 100
    rtol = batched_classify.BLOWUP_CHECK_RTOL
    for t in (T[ok] * (1 - rtol), T[ok] * (1 + rtol)):
        e = np.linalg.eigvalsh(gram.at(ok, t)[0])
        Lt = np.swapaxes(L[ok], 1, 2)
        gramian = batched_classify._gramian_stack(A[ok], G[ok], t)
        ref = np.linalg.eigvalsh(np.eye(d) + Lt @ gramian @ L[ok])
        scale = 1 + np.abs(ref).max(axis=1)
        assert np.all(np.abs(e[:, 0] - ref[:, 0]) <= 1e-3 * batched_constants.CHECK_MARGIN * scale)
    np.testing.assert_array_equal(
        batched_classify._check_signs(A[ok], G[ok], L[ok], T[ok], gram, ok), 1)


def test_an_overflowing_eigen_form_falls_back_to_pade(monkeypatch):
    # S(t) on the eigen form overflows before W(t) by the Padé steps can (κ₂(X) times larger
    # entries): such a case is searched and checked on the Padé form, with no LinAlgError from
    # an eigensolver fed infinities
    rng = np.random.default_rng(3)
    A, G, L = _blowup_ensemble(rng, 30, 4, 0.0)
    t_max = np.full(A.shape[0], 1e3)
    discs = batched_margins._eigen_discs(A)
    T_ref = batched_blowup._blowup_times(A, G, L, t_max, batched_blowup._EigenGramian(G, L, discs))
    original = batched_blowup._EigenGramian.at

    def overflowing(self, idx, t):
        S, expZ = original(self, idx, t)
        S[idx % 2 == 0] = -np.inf  # every even case
        return S, expZ

    monkeypatch.setattr(batched_blowup._EigenGramian, "at", overflowing)
    gram = batched_blowup._EigenGramian(G, L, discs)
    T = batched_blowup._blowup_times(A, G, L, t_max, gram)
    ok = np.isfinite(T_ref)
    assert ok.sum() >= 10
    np.testing.assert_allclose(T[ok], T_ref[ok], rtol=8 * np.finfo(float).eps)
    cases = np.flatnonzero(ok)
    signs = batched_classify._check_signs(A[ok], G[ok], L[ok], T[ok], gram, cases)
    np.testing.assert_array_equal(signs, 1)
