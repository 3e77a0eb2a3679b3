"""Property tests over hostile input: every public entry point either refuses cleanly
(InvalidInputError for the input, SolverError for a computation float64 cannot carry) or returns
finite results of the documented shapes whose covariances are symmetric positive semidefinite.

Semidefiniteness is judged independently of the package: eigenvalues of the exact entries at 40
digits (mpmath), against the documented tolerance λ_min ≥ −PSD_RTOL · max(λ_max, 0).
"""

from __future__ import annotations

import mpmath
import numpy as np
from hypothesis import HealthCheck, Phase, assume, event, given, settings
from hypothesis import strategies as st

from riccati_tf import Gaussian, Params, certify, equilibria, flow, layers, moment_rhs, steer
from riccati_tf.errors import InvalidInputError, SolverError
from riccati_tf.stability.certificates import REGIMES
from riccati_tf.state.validation import PSD_RTOL, as_time

from .strategies import (
    hostile_arrays,
    hostile_time_grids,
    hostile_times,
    hostile_vectors,
    valid_covariances,
    valid_params,
)

CLEAN = (InvalidInputError, SolverError)
#: a fixed sequence of draws (the same examples on every run) and no shrinking (a failure is
#: reported as drawn), so that the file stays fast and reproducible even when a property fails
_COMMON = dict(deadline=None, derandomize=True, phases=[Phase.explicit, Phase.generate],
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
FAST = settings(max_examples=50, **_COMMON)
SLOW = settings(max_examples=15, **_COMMON)
dims = st.integers(1, 3)


def exact_eigenvalues(S: np.ndarray) -> list:
    """Eigenvalues of the symmetric matrix S (its exact float64 entries) at 40 digits."""
    with mpmath.workdps(40):
        return sorted(mpmath.eigsy(mpmath.matrix(S.tolist()), eigvals_only=True))


def assert_covariance(S: np.ndarray, d: int, rtol: float = PSD_RTOL * 1.01) -> None:
    """S is a finite, exactly symmetric, positive semidefinite d×d float64 matrix."""
    assert S.shape == (d, d) and S.dtype == np.float64
    assert np.all(np.isfinite(S)), S
    assert np.array_equal(S, S.T), S
    eig = exact_eigenvalues(S)
    assert eig[0] >= -rtol * max(eig[-1], 0), (S, eig)


def assert_trajectory(tr, d: int) -> None:
    k = tr.t.size
    assert tr.mean.shape == (k, d) and tr.cov.shape == (k, d, d) and k >= 1
    assert np.all(np.isfinite(tr.t)) and np.all(np.diff(tr.t) > 0)
    assert np.all(np.isfinite(tr.mean)) and np.all(np.isfinite(tr.cov))
    for S in tr.cov:
        assert_covariance(S, d, rtol=1e-6)  # integrators keep Σ ⪰ 0 up to their tolerances


def gaussian_or_skip(d, cov, mean=None) -> Gaussian:
    try:
        return Gaussian(np.zeros(d) if mean is None else mean, cov)
    except InvalidInputError:
        assume(False)


def params_or_skip(**kwargs) -> Params:
    try:
        return Params(**kwargs)
    except InvalidInputError:
        assume(False)


# --------------------------------------------------------------------------- construction

@FAST
@given(dims.flatmap(hostile_arrays))
def test_params_refuses_or_holds_finite_float64(A):
    try:
        p = Params(A=A)
    except InvalidInputError:
        event("refused")
        return
    d = p.d
    assert d >= 1 and p.A.shape == (d, d) and p.A.dtype == np.float64
    assert np.all(np.isfinite(p.A)) and not p.A.flags.writeable
    if isinstance(A, np.ndarray) and A.dtype == np.float64:
        assert np.array_equal(p.A, A.reshape(d, d))  # float64 input is kept bit for bit


@FAST
@given(dims.flatmap(lambda d: st.tuples(hostile_vectors(d), hostile_arrays(d))))
def test_gaussian_refuses_or_is_symmetric_psd(mean_cov):
    mean, cov = mean_cov
    try:
        g = Gaussian(mean, cov)
    except InvalidInputError:
        event("refused")
        return
    assert_covariance(g.cov, g.d)
    assert g.mean.shape == (g.d,) and np.all(np.isfinite(g.mean))
    if isinstance(cov, np.ndarray) and cov.dtype == np.float64 and np.array_equal(cov, cov.T):
        assert np.array_equal(g.cov, cov.reshape(g.d, g.d))  # symmetric input kept exactly


@FAST
@given(dims.flatmap(lambda d: st.tuples(
    st.builds(lambda *a: np.array(a).reshape(d, d),
              *[st.floats(-8, 8, allow_subnormal=False) for _ in range(d * d)]),
    st.integers(-1000, 960))))
def test_symmetry_and_psd_verdicts_do_not_depend_on_scale(M_k):
    """Scaling by 2^k (exact here) never changes whether a matrix is accepted as a covariance,
    nor whether a value matrix is scalar."""
    M, k = M_k
    scaled = np.ldexp(M, k)
    assume(np.array_equal(np.ldexp(scaled, -k), M))  # no rounding into the subnormal range

    def verdict(C):
        try:
            Gaussian(np.zeros(C.shape[0]), C)
            return "accepted"
        except InvalidInputError as exc:
            return str(exc).split(":")[0]

    assert verdict(M) == verdict(scaled)
    d = M.shape[0]
    assert (Params(A=np.eye(d), V=M, B=np.eye(d)).value_scalars is None) == \
        (Params(A=np.eye(d), V=scaled, B=np.eye(d)).value_scalars is None)
    sym = M + M.T
    assert verdict(sym @ sym.T) == verdict(np.ldexp(sym @ sym.T, k)) == "accepted"


@FAST
@given(dims.flatmap(valid_covariances), st.one_of(st.integers(-2, 5), st.none(), st.floats(),
                                                 st.text(max_size=2), st.booleans()),
       st.one_of(st.none(), st.integers(-1, 2**64), st.booleans(), st.floats(),
                 st.just(np.random.default_rng(0)), st.just(np.random.RandomState(0))))
def test_sample_refuses_or_draws_finite_points(cov, n, rng):
    g = gaussian_or_skip(cov.shape[0], cov)
    try:
        x = g.sample(n, rng)
    except CLEAN as exc:
        event(f"refused: {type(exc).__name__}")
        return
    assert x.shape == (n, g.d) and np.all(np.isfinite(x))


@FAST
@given(hostile_times, st.booleans())
def test_times_are_finite_reals_or_refused(value, allow_zero):
    try:
        t = as_time("t", value, allow_zero=allow_zero)
    except InvalidInputError:
        event("refused")
        return
    assert isinstance(t, float) and np.isfinite(t) and (t > 0 or (allow_zero and t == 0))
    assert not isinstance(value, bool | str | complex | type(None))


# --------------------------------------------------------------------------- dynamics

@FAST
@given(dims.flatmap(lambda d: st.tuples(valid_params(d), valid_covariances(d))))
def test_moment_rhs_is_finite_and_symmetric_or_refused(p_cov):
    kwargs, cov = p_cov
    p, g = params_or_skip(**kwargs), gaussian_or_skip(cov.shape[0], cov)
    try:
        dm, dS = moment_rhs(p, g)
    except CLEAN as exc:
        event(f"refused: {type(exc).__name__}")
        return
    assert dm.shape == (p.d,) and dS.shape == (p.d, p.d)
    assert np.all(np.isfinite(dm)) and np.all(np.isfinite(dS))
    assert np.array_equal(dS, dS.T)


@SLOW
@given(dims.flatmap(lambda d: st.tuples(valid_params(d, max_exponent=2), valid_covariances(d))),
       st.floats(1e-3, 2.0), st.sampled_from(["auto", "rk"]), st.data())
def test_flow_refuses_or_returns_psd_trajectory(p_cov, t_final, method, data):
    kwargs, cov = p_cov
    p, g = params_or_skip(**kwargs), gaussian_or_skip(cov.shape[0], cov)
    t_eval = data.draw(st.one_of(st.none(), hostile_time_grids(t_final)))
    try:
        tr = flow(p, g, t_final, method=method, t_eval=t_eval)
    except CLEAN as exc:
        event(f"refused: {type(exc).__name__}")
        return
    assert_trajectory(tr, p.d)
    assert tr.status in ("completed", "blowup")
    if tr.status == "blowup":
        assert np.isfinite(tr.blowup_time) and 0 < tr.blowup_time <= t_final * (1 + 1e-9)


@FAST
@given(dims.flatmap(lambda d: st.tuples(valid_params(d), valid_covariances(d))),
       st.integers(1, 4) | st.integers(1, 4) | st.integers(-1, 0) | st.floats() | st.text(),
       st.floats(1e-3, 1.0) | st.floats(1e-3, 1.0) | hostile_times)
def test_layers_refuse_or_return_psd_states(p_cov, n_layers, tau):
    kwargs, cov = p_cov
    p, g = params_or_skip(**kwargs), gaussian_or_skip(cov.shape[0], cov)
    try:
        tr = layers(p, g, n_layers, tau)
    except CLEAN as exc:
        event(f"refused: {type(exc).__name__}")
        return
    assert_trajectory(tr, p.d)
    assert tr.status in ("completed", "blowup") and tr.t.size <= n_layers + 1


@SLOW
@given(st.integers(1, 2).flatmap(lambda d: st.tuples(valid_params(d, max_exponent=4),
                                                     valid_covariances(d))))
def test_certify_refuses_or_names_a_regime(p_cov):
    kwargs, cov = p_cov
    p = params_or_skip(**kwargs)
    try:
        c = certify(p, cov)
    except CLEAN as exc:
        event(f"refused: {type(exc).__name__}")
        return
    assert c.regime in REGIMES
    if c.regime in ("converges", "collapses") and c.equilibrium is not None:
        assert_covariance(c.equilibrium.cov, p.d, rtol=1e-6)
    if c.regime == "blows_up":
        assert c.blowup_time is not None and np.isfinite(c.blowup_time) and c.blowup_time > 0


@SLOW
@given(st.integers(1, 2).flatmap(lambda d: valid_params(d, max_exponent=4)),
       st.sampled_from(["stable", "all"]))
def test_equilibria_refuse_or_are_psd(kwargs, which):
    p = params_or_skip(**kwargs)
    try:
        eqs = equilibria(p, which=which)
    except CLEAN as exc:
        event(f"refused: {type(exc).__name__}")
        return
    for eq in eqs:
        assert_covariance(eq.cov, p.d, rtol=1e-6)
        assert np.isfinite(eq.residual)


@SLOW
@given(st.integers(1, 2).flatmap(lambda d: st.tuples(valid_covariances(d), valid_covariances(d))),
       st.one_of(st.floats(0.1, 2.0), hostile_times))
def test_steer_refuses_or_plans_finite_controls(covs, T):
    start, target = (gaussian_or_skip(c.shape[0], c) for c in covs)
    try:
        plan = steer(start, target, T)
    except CLEAN as exc:
        event(f"refused: {type(exc).__name__}")
        return
    assert plan.pieces and np.isclose(plan.breakpoints[-1], plan.T)
    for piece in plan.pieces:
        q = piece.params(piece.t0)
        assert all(np.all(np.isfinite(a)) for a in (q.A, q.b, *(m for h in q.heads for m in h)))


@SLOW
@given(mean=hostile_vectors(2), cov=hostile_arrays(2))
def test_accessibility_rank_refuses_or_counts_within_the_stratum(mean, cov):
    from riccati_tf.reachability.lie import accessibility_rank

    try:
        acc = accessibility_rank("affine", 2, (mean, cov))
    except CLEAN as exc:
        event(f"refused: {type(exc).__name__}")
        return
    assert 0 <= acc.rank <= acc.expected and 0 <= acc.cov_rank <= 2
