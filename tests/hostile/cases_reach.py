"""Hostile cases for reachability (area "reach"): `lie.accessibility_rank`,
`lie.accessibility_table`, `steer` and `ControlPlan.verify` fed malformed points, fixed parameters,
configurations, seeds and budgets, covariances from the subnormal range to 1e308, depths from
1e-300 to the largest allowed, degenerate strata and tampered plans.

Every case ends in a clean error or in a result checked here, independently of the package:
- a plan must say success, have finite controls and reach its target: its pieces are pushed
  through the moment equations by code written here — closed-form matrix exponentials for
  affine pieces (V = 0; Σ carried as a factor scaled by powers of two, so any magnitude is
  exact), otherwise scipy `solve_ivp` (DOP853, rtol 1e-12) on ṁ = (A + V)m + VΣBm + b,
  Σ̇ = AΣ + ΣAᵀ + VΣBΣ + ΣBᵀΣVᵀ — and the terminal error max(‖m − m1‖/s_m, ‖Σ − Σ1‖/‖Σ1‖),
  s_m = max(‖m0‖, ‖m1‖, ‖Σ0‖^½, ‖Σ1‖^½), must be ≤ 1e-8;
- an accessibility rank must equal the stratum dimension d + r d − r(r−1)/2 counted here where
  the rank condition is known to hold, and must not depend on the scale of the point.
"""

from __future__ import annotations

import contextlib
import io
import math
from dataclasses import replace
from decimal import Decimal
from fractions import Fraction

import numpy as np
from scipy.integrate import solve_ivp
from scipy.linalg import expm

from riccati_tf import Gaussian, steer
from riccati_tf.errors import RankMismatchError
from riccati_tf.reachability.lie import (
    CONFIGURATIONS,
    Configuration,
    accessibility_rank,
    accessibility_table,
    control_system,
    generic_matrix,
    stratum_dimension,
)
from riccati_tf.reachability.lie import main as lie_main

from . import CleanError, case, cases_of

AREA = "reach"
#: bound on the independently measured terminal error of a returned plan
REACH_RTOL = 1e-8
I2 = np.eye(2)
Z2 = np.zeros(2)


# --------------------------------------------------------------------------- references

def _frob(x) -> tuple[float, int]:
    """(n, k): ‖x‖_F = n·2^k, on x scaled by a power of two."""
    x = np.asarray(x, dtype=float)
    top = float(np.max(np.abs(x))) if x.size else 0.0
    if top == 0.0:
        return 0.0, 0
    assert math.isfinite(top), "a non-finite state"
    k = math.frexp(top)[1]
    return float(np.linalg.norm(np.ldexp(x, -k))), k


def _div(a: tuple[float, int], b: tuple[float, int]) -> float:
    if b[0] == 0.0:
        return math.ldexp(*a) if a[0] else 0.0
    return math.ldexp(a[0] / b[0], a[1] - b[1])


def _log2(x: tuple[float, int]) -> float:
    return math.log2(x[0]) + x[1] if x[0] else -math.inf


def _affine_endpoint(plan):
    """(m(T), F, k) for affine pieces (V = B = 0), in closed form: m ↦ e^{Aτ} m + τ X b with X
    the top-right block of e^{[[Aτ, I], [0, 0]]} (= ∫_0^1 e^{Aτu} du); Σ(T) = (F 2^k) Σ0
    (F 2^k)ᵀ with F the product of the e^{Aτ}, renormalised by powers of two."""
    d = plan.start.d
    m = plan.start.mean
    F, k = np.eye(d), 0
    for piece in plan.pieces:
        p = piece.params(piece.t0)
        assert not np.any(p.V) and not np.any(p.B), "affine reference on an attention piece"
        tau = piece.t1 - piece.t0
        aug = np.zeros((2 * d, 2 * d))
        aug[:d, :d], aug[:d, d:] = p.A * tau, np.eye(d)
        W = expm(aug)
        m = W[:d, :d] @ m + tau * (W[:d, d:] @ p.b)
        F = W[:d, :d] @ F
        e = math.frexp(float(np.max(np.abs(F))))[1]
        F, k = np.ldexp(F, -e), k + e
    return m, F, k


def _raw_rhs(p, m, S):
    A, B, V, b = p.A, p.B, p.V, p.b
    return (A + V) @ m + V @ S @ B @ m + b, A @ S + S @ A.T + V @ S @ B @ S + S @ B.T @ S @ V.T


def _ode_endpoint(plan):
    """(m(T), Σ(T)) by DOP853 (rtol 1e-12) on the raw moment equations, piece by piece, in units
    where ‖Σ0‖ (or 1) is 1 — the cases using it keep the covariance within 1e±6 of that."""
    d = plan.start.d
    c = 2.0 ** _frob(plan.start.cov)[1]
    y = np.concatenate([plan.start.mean / math.sqrt(c), (plan.start.cov / c).ravel()])
    for piece in plan.pieces:
        def rhs(t, y, piece=piece):
            dm, dS = _raw_rhs(piece.params(t), y[:d] * math.sqrt(c), y[d:].reshape(d, d) * c)
            return np.concatenate([dm / math.sqrt(c), dS.ravel() / c])

        sol = solve_ivp(rhs, (piece.t0, piece.t1), y, method="DOP853", rtol=1e-12, atol=1e-14)
        assert sol.success, sol.message
        y = sol.y[:, -1]
    return y[:d] * math.sqrt(c), y[d:].reshape(d, d) * c


def _check_plan(plan, reference: str = "auto") -> None:
    """The plan says success, its controls are finite, and the independent reference lands on
    the target within REACH_RTOL."""
    assert plan.success and plan.residual <= plan.tolerance, (plan.residual, plan.message)
    for piece in plan.pieces:
        for t in (piece.t0, piece.t1):
            p = plan.params_at(t)
            assert all(np.all(np.isfinite(x)) for x in (p.A, p.B, p.V, p.b)), "non-finite control"
    start, target = plan.start, plan.target
    s_m = max((_frob(start.mean), _frob(target.mean), _sqrt(_frob(start.cov)),
               _sqrt(_frob(target.cov))), key=_log2)
    affine = all(not np.any(p.layer.V) for p in plan.pieces if hasattr(p, "layer")) and \
        plan.route == "polar"
    if reference == "affine" or (reference == "auto" and affine):
        m, F, k = _affine_endpoint(plan)
        e = _frob(target.cov)[1] // 2
        G = np.ldexp(F, k - e)
        cov_err = _div(_frob(G @ start.cov @ G.T - np.ldexp(target.cov, -2 * e)),
                       _frob(np.ldexp(target.cov, -2 * e)))
    else:
        m, S = _ode_endpoint(plan)
        cov_err = _div(_frob(S - target.cov), _frob(target.cov))
    mean_err = _div(_frob(m - target.mean), s_m)
    assert max(cov_err, mean_err) <= REACH_RTOL, f"terminal error m {mean_err:.3g}, Σ {cov_err:.3g}"


def _sqrt(x: tuple[float, int]) -> tuple[float, int]:
    n, k = x
    return (math.sqrt(n), k // 2) if k % 2 == 0 else (math.sqrt(2 * n), (k - 1) // 2)


def _random_gaussian(seed: int, d: int, r: int, scale: float = 1.0, shift: float = 1.0):
    rng = np.random.default_rng(seed)
    L = rng.standard_normal((d, r)) * math.sqrt(scale)
    return Gaussian(shift * rng.standard_normal(d), L @ L.T)


def _steer_checked(args):
    start, target, T, kwargs = args
    _check_plan(steer(start, target, T, **kwargs))


def _stratum_dimension(d: int, r: int) -> int:
    """dim{(m, Σ): rank Σ = r} counted as d + (r d − r(r − 1)/2) (SPEC §3), written here."""
    return d + sum(d - i for i in range(r))


# --------------------------------------------------------------------------- accessibility

cases_of(AREA, "error", {
    "point_mean_numpy_strings": lambda: accessibility_rank("affine", 2,
                                                           (np.array(["1", "2"]), I2)),
    "point_mean_decimal_nan": lambda: accessibility_rank("affine", 2,
                                                         ([Decimal("NaN"), 0], I2)),
    "point_mean_dict": lambda: accessibility_rank("affine", 2, ({"m": 1}, I2)),
    "point_cov_object_none": lambda: accessibility_rank(
        "affine", 2, (Z2, np.array([[1, None], [None, 1]], dtype=object))),
    "point_cov_object_minus_inf": lambda: accessibility_rank(
        "affine", 2, (Z2, np.array([[-math.inf, 0], [0, 1]], dtype=object))),
    "point_cov_fraction_not_psd": lambda: accessibility_rank(
        "affine", 2, (Z2, np.array([[Fraction(1), Fraction(2)], [Fraction(2), Fraction(1)]],
                                   dtype=object))),
    "point_cov_fraction_beyond_float": lambda: accessibility_rank(
        "affine", 1, ([0], [[Fraction(10**400)]])),
    "point_two_letter_string": lambda: accessibility_rank("affine", 2, "mS"),
    "point_mapping": lambda: accessibility_rank("affine", 2, {"mean": Z2, "cov": I2}),
    "point_three_items": lambda: accessibility_rank("affine", 2, (Z2, I2, I2)),
    "fixed_integer": lambda: accessibility_rank("attention", 2, fixed=5),
    "fixed_string": lambda: accessibility_rank("attention", 2, fixed="A"),
    "fixed_pairs_list": lambda: accessibility_rank("attention", 2, fixed=[("A", I2)]),
    "fixed_integer_key": lambda: accessibility_rank("attention", 2, fixed={0: I2}),
    "fixed_control_key": lambda: accessibility_rank("values", 2, fixed={"V": I2}),
    "forged_configuration": lambda: accessibility_rank(
        Configuration("affine", ("A", "b", "Q"), (), "forged"), 2),
    "seed_negative": lambda: accessibility_rank("affine", 2, seed=-1),
    "seed_float": lambda: accessibility_rank("affine", 2, seed=1.5),
    "seed_bool": lambda: accessibility_rank("affine", 2, seed=True),
    "depth_beyond_budget": lambda: accessibility_rank("affine", 2, depth=10**6),
    "dimension_beyond_budget": lambda: accessibility_rank("full", 40),
    "work_budget_spent": lambda: accessibility_rank("values-nobias", 3, depth=6, max_work=500),
    "work_budget_weighs_huge_rationals": lambda: accessibility_rank(
        "attention-nobias", 3, (np.array([1e182, -2e182, 3e181]),
                                1e298 * np.outer([1.0, -0.5, 2.0], [1.0, -0.5, 2.0])),
        max_work=300_000),
    "max_dimension_string": lambda: accessibility_rank("affine", 2, max_dimension="5"),
    "system_of_other_dimension": lambda: accessibility_rank(control_system("affine", 1), 2),
    "evaluate_string_state": lambda: control_system("affine", 1).evaluate(["0", "1"]),
    "params_unknown_control": lambda: control_system("attention", 2).params({"A": I2}),
    "table_dims_string": lambda: accessibility_table("123"),
    "table_dims_mapping": lambda: accessibility_table({1: 1}),
    "table_dims_zero": lambda: accessibility_table([1, 0], "affine"),
    "table_controls_number": lambda: accessibility_table([1], [5]),
    "table_rows_beyond_budget": lambda: accessibility_table([5] * 9),
    "table_work_budget_spent": lambda: accessibility_table([2, 3], max_work=2_000),
    "generic_matrix_name_not_a_string": lambda: generic_matrix(2, 5),
    "generic_matrix_dimension_huge": lambda: generic_matrix(10**6, "V"),
    "stratum_dimension_string": lambda: stratum_dimension("2", 1),
    "table_command_dims_zero": lambda: _lie_command("--table", "--dims", "0"),
    "table_command_depth_beyond_budget": lambda: _lie_command("--table", "--dims", "1",
                                                              "--depth", "99"),
}, lambda fn: fn(), timeout=30)


def _lie_command(*argv):
    """`python -m riccati_tf.reachability.lie ARGV` in-process: exit 2/3, one stderr line."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = lie_main(list(argv))
    lines = err.getvalue().strip().splitlines()
    if code in (2, 3) and len(lines) == 1:
        raise CleanError(lines[0])
    raise AssertionError(f"exit {code} with stderr {err.getvalue()!r}")


def _rank_is_full(args):
    """The affine controls (A, b) satisfy the rank condition on every stratum (SPEC §4): the
    rank must equal the dimension counted here, at every scale of the point."""
    d, point = args
    acc = accessibility_rank("affine", d, point)
    assert acc.rank == _stratum_dimension(d, acc.cov_rank), (acc.rank, acc.cov_rank)
    assert np.all(np.isfinite(acc.basis)) and acc.basis.shape == (acc.rank, d + d * (d + 1) // 2)
    return acc


cases_of(AREA, "result", {
    "rank_at_subnormal_covariance": (2, (Z2, 1e-310 * np.array([[2.0, 1.0], [1.0, 1.0]]))),
    "rank_at_covariance_1e300": (2, ([1e150, -3e150], 1e300 * np.array([[2.0, 1.0],
                                                                        [1.0, 1.0]]))),
    "rank_at_exact_fractions": (3, ([Fraction(1, 3), 0, Fraction(-7, 5)],
                                    np.array([[Fraction(1, 3), 0, 0], [0, Fraction(2, 7), 0],
                                              [0, 0, 0]], dtype=object))),
    "rank_at_rank_one_float_point": (3, (np.ones(3), np.outer([1e-3, 2.0, -7.0],
                                                               [1e-3, 2.0, -7.0]))),
}, _rank_is_full, timeout=30)


@case(AREA, "result", timeout=30)
def rank_of_a_point_below_the_rank_threshold():
    """Σ = diag(1, 1e-320), as floats or as exact Fractions: 1e-320 is below the numerical rank
    threshold d·1e-12·max|Σ|, so the point is read on the rank-1 stratum (rebuilt exactly
    there) and the rank is that stratum's full dimension."""
    for cov in (np.diag([1.0, 1e-320]),
                np.array([[Fraction(1), 0], [0, Fraction(1, 10**320)]], dtype=object)):
        a = accessibility_rank("affine", 2, (Z2, cov))
        assert (a.cov_rank, a.rank) == (1, _stratum_dimension(2, 1)), (a.cov_rank, a.rank)


@case(AREA, "result", timeout=30)
def rank_does_not_depend_on_the_scale_of_the_point():
    """'affine-nobias' keeps mᵀΣ⁻¹m, so its rank at Σ ≻ 0 is one short of the dimension; the
    same point scaled by 2^±600 (exact) must give the same rank."""
    m, S = np.array([1.0, -2.0]), np.array([[2.0, 0.5], [0.5, 1.0]])
    ranks = {accessibility_rank("affine-nobias", 2, (m * 2.0**k, S * 4.0**k)).rank
             for k in (-300, 0, 300)}
    assert ranks == {_stratum_dimension(2, 2) - 1}, ranks


@case(AREA, "result", timeout=30)
def small_table_matches_the_counted_dimensions():
    """accessibility_table([1, 2], "affine") (a single name is one configuration): one row per
    (d, r), each of full rank."""
    rows = accessibility_table([1, 2], "affine")
    assert [(a.d, a.cov_rank) for a in rows] == [(1, 0), (1, 1), (2, 0), (2, 1), (2, 2)]
    assert all(a.rank == _stratum_dimension(a.d, a.cov_rank) for a in rows)
    assert next(iter(CONFIGURATIONS)) == "affine"


# --------------------------------------------------------------------------- steer: refusals

def _std() -> Gaussian:
    return Gaussian(Z2, I2)


def _two() -> Gaussian:
    return Gaussian([1.0, -1.0], [[2.0, 0.5], [0.5, 1.0]])


cases_of(AREA, "error", {
    "steer_fixed_integer": lambda: steer(_std(), _two(), 1.0, controls="attention", fixed=5),
    "steer_fixed_string": lambda: steer(_std(), _two(), 1.0, controls="attention", fixed="A"),
    "steer_fixed_control": lambda: steer(_std(), _two(), 1.0, controls="attention",
                                         fixed={"B": I2}),
    "steer_fixed_unknown": lambda: steer(_std(), _two(), 1.0, controls="values",
                                         fixed={"W": I2}),
    "steer_fixed_bool_matrix": lambda: steer(_std(), _two(), 1.0, controls="attention",
                                             fixed={"V": np.eye(2, dtype=bool)}),
    "steer_controls_numpy_string": lambda: steer(_std(), _two(), 1.0,
                                                 controls=np.str_("attentive")),
    "steer_controls_list": lambda: steer(_std(), _two(), 1.0, controls=["affine"]),
    "steer_T_float_max": lambda: steer(Gaussian([0.0], [[0.0]]), Gaussian([0.0], [[0.0]]),
                                       1.797e308),
    "steer_T_below_subnormal": lambda: steer(_std(), _two(), Fraction(1, 10**400)),
    "steer_T_decimal_infinity": lambda: steer(_std(), _two(), Decimal("Infinity")),
    "steer_T_negative_zero": lambda: steer(_std(), _two(), -0.0),
    "steer_T_numpy_bool": lambda: steer(_std(), _two(), np.bool_(True)),
    "steer_n_pieces_huge": lambda: steer(_std(), _two(), 1.0, controls="values",
                                         n_pieces=10**9),
    "steer_check_accessibility_string": lambda: steer(_std(), _two(), 1.0,
                                                      check_accessibility="no"),
    "steer_temperature_infinite": lambda: steer(_std(), _two(), 1.0, controls="attention",
                                                temperature=math.inf),
    "steer_dimension_mismatch": lambda: steer(_std(), Gaussian([0.0], [[1.0]]), 1.0),
}, lambda fn: fn())


def _rank_mismatch(args):
    """Unequal ranks: RankMismatchError naming both ranks."""
    start, target, r0, r1 = args
    try:
        steer(start, target, 1.0)
    except RankMismatchError as exc:
        assert f"rank Σ0 = {r0}" in str(exc) and f"rank Σ1 = {r1}" in str(exc), str(exc)
        raise
    raise AssertionError("unequal ranks were accepted")


cases_of(AREA, "error", {
    "rank_mismatch_full_to_degenerate": (_std(), Gaussian(Z2, np.diag([1.0, 0.0])), 2, 1),
    "rank_mismatch_at_1e-300": (Gaussian(np.zeros(3), 1e-300 * np.diag([1.0, 1.0, 0.0])),
                                Gaussian(np.zeros(3), 1e-300 * np.eye(3)), 2, 3),
    "rank_mismatch_at_1e300": (Gaussian(Z2, 1e300 * I2), Gaussian(Z2, np.zeros((2, 2))),
                               2, 0),
}, _rank_mismatch)


def _plan():
    return steer(_std(), _two(), 1.0)


cases_of(AREA, "error", {
    "params_at_string_time": lambda: _plan().params_at("0.5"),
    "params_at_beyond_T": lambda: _plan().params_at(2.0),
    "integrate_one_point": lambda: _plan().integrate(points_per_piece=1),
    "verify_rtol_above_one": lambda: _plan().verify(rtol=2.0),
    "verify_atol_nan": lambda: _plan().verify(atol=math.nan),
    "particles_wrong_width": lambda: _plan().particles(np.zeros((10, 3)), steps_per_piece=2),
}, lambda fn: fn())


# --------------------------------------------------------------------------- steer: results

cases_of(AREA, "result", {
    "steer_into_the_subnormal_range": (Gaussian([1e-150, 0.0], 1e-300 * I2),
                                       Gaussian(Z2, np.array([[3e-315, 1e-315],
                                                              [1e-315, 1e-315]])), 1.0, {}),
    "steer_to_covariance_near_float_max": (Gaussian(Z2, 1e290 * I2),
                                           Gaussian([1e153, -1e154], 1.5e308 * I2), 1.0, {}),
    "steer_from_1e-100_to_1e100": (Gaussian(Z2, 1e-100 * I2),
                                   Gaussian([1e50, 0.0], 1e100 * np.array([[2.0, 1.0],
                                                                           [1.0, 1.0]])),
                                   1.0, {}),
    "steer_depth_1e-300": (Gaussian([1.0], [[1.0]]), Gaussian([2.0], [[3.0]]), 1e-300, {}),
    "steer_depth_1e100": (_std(), _two(), 1e100, {}),
    "steer_rank_zero_in_three_dimensions": (Gaussian([1.0, 2.0, 3.0], np.zeros((3, 3))),
                                            Gaussian([-3.0, 0.0, 5e-3], np.zeros((3, 3))),
                                            0.5, {}),
    "steer_rank_one_to_the_subnormal_range": (Gaussian(Z2, 1e-280 * np.outer([1.0, 2.0],
                                                                             [1.0, 2.0])),
                                              Gaussian(Z2, 1e-310 * np.outer([3.0, -1.0],
                                                                             [3.0, -1.0])),
                                              2.0, {}),
    "steer_full_controls_rank_two_of_four": (_random_gaussian(3, 4, 2),
                                             _random_gaussian(4, 4, 2, scale=50.0), 0.7,
                                             {"controls": "full"}),
}, _steer_checked, timeout=30)


cases_of(AREA, "result", {
    "attention_rank_one_in_three_dimensions": (_random_gaussian(5, 3, 1),
                                               _random_gaussian(6, 3, 1), 1.0,
                                               {"controls": "attention"}),
    "attention_with_feed_forward_drift": (_random_gaussian(7, 2, 2), _random_gaussian(8, 2, 2),
                                          1.5, {"controls": "attention",
                                                "fixed": {"A": [[-0.5, 1.0], [0.0, 0.3]]}}),
    "attention_covariance_grows_1e3": (_std(), Gaussian([1.0, 2.0], 1e3 * I2), 1.0,
                                       {"controls": "attention"}),
    "attention_imposed_value_matrix": (Gaussian([0.5, 0.0], [[2.0, 0.3], [0.3, 1.0]]),
                                       Gaussian([-1.0, 1.0], [[1.0, -0.2], [-0.2, 1.5]]),
                                       1.0, {"controls": "attention",
                                             "fixed": {"V": [[1.0, 0.2], [-0.3, 0.8]]}}),
}, _steer_checked, timeout=30)


@case(AREA, "result", timeout=30)
def imposed_value_matrix_on_an_ill_conditioned_start_is_honest():
    """With V imposed, B(t) = Σ(t)⁻¹V⁻¹(K − A) is open loop and amplifies integration errors by
    about cond Σ; from a start with cond Σ ≈ 1e3 the plan may miss the target, but it must say
    so: success is True exactly when the independent integration lands within tol (up to a
    factor 10 of margin on either side), and a failure says FAILED."""
    start, target = _random_gaussian(9, 2, 2), _random_gaussian(10, 2, 2)
    plan = steer(start, target, 1.0, controls="attention",
                 fixed={"V": [[1.0, 0.2], [-0.3, 0.8]]})
    m, S = _ode_endpoint(plan)
    s_m = max((_frob(start.mean), _frob(target.mean), _sqrt(_frob(start.cov)),
               _sqrt(_frob(target.cov))), key=_log2)
    error = max(_div(_frob(S - target.cov), _frob(target.cov)), _div(_frob(m - target.mean), s_m))
    if plan.success:
        assert error <= 10 * plan.tolerance, (error, plan.residual)
    else:
        assert error > plan.tolerance / 10 and "FAILED" in plan.message, (error, plan.residual)


@case(AREA, "either", timeout=60)
def shooting_values_configuration_is_verified_or_refused():
    """'values' (V, b free, B held) goes to multiple shooting: a returned plan must reach the
    target by the independent DOP853 integration."""
    _check_plan(steer(Gaussian([0.2, -0.1], [[1.0, 0.1], [0.1, 0.8]]),
                      Gaussian([0.0, 0.3], [[1.1, 0.0], [0.0, 0.9]]), 1.0,
                      controls="values", n_pieces=2))


@case(AREA, "result", timeout=30)
def verify_reports_a_tampered_target():
    """verify() is honest: the plan for one target, checked against another (3 % off in Σ),
    must report an error of that size (the independent relative Σ error)."""
    plan = _plan()
    other = Gaussian(_two().mean, _two().cov * 1.03)
    error = replace(plan, target=other).verify()
    expected = np.linalg.norm(_two().cov - other.cov) / np.linalg.norm(other.cov)
    assert abs(error - expected) <= 1e-6 * expected, (error, expected)


@case(AREA, "result", timeout=30)
def verify_is_honest_for_a_tiny_target():
    """The plan from N(0, 1e-290 I) to N(0, 1e-315 I) checked against N(0, 2e-315 I): the
    covariance error is relative to the target (1/2), not hidden under the start's scale."""
    plan = steer(Gaussian(Z2, 1e-290 * I2), Gaussian(Z2, 1e-315 * I2), 1.0)
    error = replace(plan, target=Gaussian(Z2, 2e-315 * I2)).verify()
    assert abs(error - 0.5) <= 1e-6, error


@case(AREA, "result", timeout=30)
def exact_fraction_and_integer_inputs_are_steered():
    """Gaussians given as Fractions and ints (read exactly as float64) are steered like floats."""
    start = Gaussian([Fraction(1, 3), 2], [[Fraction(5, 2), 1], [1, 1]])
    target = Gaussian([0, Fraction(-7, 4)], [[1, 0], [0, Fraction(1, 9)]])
    _check_plan(steer(start, target, Fraction(3, 2)))
