"""Lie-bracket accessibility of the moment system (SPEC §3–§4): fields, brackets, ranks, table."""

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from riccati_tf import Gaussian, Params
from riccati_tf.errors import InvalidInputError, SolverError
from riccati_tf.reachability.lie import (
    CONFIGURATIONS,
    accessibility_document,
    accessibility_rank,
    accessibility_table,
    control_system,
    exact_rank,
    lie_bracket,
    main,
    rational_point,
    stratum_dimension,
    stratum_point,
    table_markdown,
)
from riccati_tf.reachability.lie.rank import DEFAULT_DEPTH
from riccati_tf.reachability.lie.table import _document
from riccati_tf.state.moments import moment_arrays

DOC = Path(__file__).resolve().parents[1] / "docs" / "accessibility.md"


def vech(S):
    return np.array([S[i, j] for i in range(S.shape[0]) for j in range(i + 1)])


def state(mean, cov):
    return np.concatenate([np.asarray(mean, float), vech(np.asarray(cov, float))])


def unstate(z, d):
    S = np.zeros((d, d))
    k = d
    for i in range(d):
        for j in range(i + 1):
            S[i, j] = S[j, i] = z[k]
            k += 1
    return z[:d], S


def numeric_field(params_fn, d):
    """z ↦ (ṁ, vech Σ̇) from the numeric moment equations (riccati_tf.state.moments)."""
    def f(z):
        m, S = unstate(z, d)
        dm, dS = moment_arrays(params_fn(), m, S)
        return state(dm, dS)
    return f


def fd_bracket(f, g, z, h=1e-6):
    """[f, g](z) = Dg f − Df g with central-difference Jacobians."""
    def jac(F):
        cols = [(F(z + h * e) - F(z - h * e)) / (2 * h) for e in np.eye(z.size)]
        return np.array(cols).T
    return jac(g) @ f(z) - jac(f) @ g(z)


@pytest.mark.parametrize("name", sorted(CONFIGURATIONS))
@pytest.mark.parametrize("d", [1, 2, 3])
def test_fields_reproduce_the_moment_equations(name, d, rng):
    """f0(z) + Σ u_i(params) g_i(z), evaluated exactly, equals moment_arrays at random points and
    random control values (the held parameters come from the system)."""
    system = control_system(name, d)
    mean, cov = stratum_point(d, d, seed=3)
    z = [*mean, *(cov[i, j] for i in range(d) for j in range(i + 1))]
    fields = np.array(system.evaluate(z), dtype=float)
    controls = {p: rng.standard_normal(d) if p == "b" else rng.standard_normal((d, d))
                for p in system.configuration.controls}
    params = system.params(controls)
    u = system.monomial_values(params)
    dm, dS = moment_arrays(params, np.array(mean, float), np.array(cov, float))
    np.testing.assert_allclose(u @ fields, state(dm, dS), rtol=1e-12, atol=1e-12)


def test_brackets_match_finite_differences_of_the_numeric_field(rng):
    """[g[B_12], g[B_21]], [f0, g[B_11]] and [g[b_1], g[B_21]] for "attention" (d = 2) against
    central differences of fields built from moment_arrays only."""
    d = 2
    system = control_system("attention", d)
    V = system.fixed["V"]
    E = lambda i, j: np.eye(d)[:, [i]] @ np.eye(d)[[j], :]  # noqa: E731
    base = numeric_field(lambda: Params(np.zeros((d, d)), V=V), d)
    numeric = {"f0": base}
    for i in range(d):
        for j in range(d):
            fB = numeric_field(lambda i=i, j=j: Params(np.zeros((d, d)), V=V, B=E(i, j)), d)
            numeric[f"g[B_{i + 1}{j + 1}]"] = lambda z, fB=fB: fB(z) - base(z)
        fb = numeric_field(lambda i=i: Params(np.zeros((d, d)), V=V, b=np.eye(d)[i]), d)
        numeric[f"g[b_{i + 1}]"] = lambda z, fb=fb: fb(z) - base(z)
    mean, cov = stratum_point(d, d, seed=5)
    z_exact = [*mean, *(cov[i, j] for i in range(d) for j in range(i + 1))]
    z = np.array(z_exact, dtype=float)
    index = {n: k for k, n in enumerate(system.names)}
    gens = system.fields[0][0].ring.gens
    for a, b in [("g[B_12]", "g[B_21]"), ("f0", "g[B_11]"), ("g[b_1]", "g[B_21]")]:
        exact = lie_bracket(system.fields[index[a]], system.fields[index[b]], gens)
        value = np.array([float(p(*[Fraction(x) for x in z_exact])) if p else 0.0
                          for p in exact])
        np.testing.assert_allclose(value, fd_bracket(numeric[a], numeric[b], z), rtol=1e-7,
                                   atol=1e-9 * np.linalg.norm(value))
        assert np.linalg.norm(value) > 1e-3  # not a vacuous comparison


def test_jacobi_identity_holds_exactly():
    system = control_system("values", 2)
    gens = system.fields[0][0].ring.gens
    X, Y, Z = system.fields[1], system.fields[3], system.fields[5]

    def br(f, g):
        return lie_bracket(f, g, gens)

    total = [p + q + r for p, q, r in zip(br(X, br(Y, Z)), br(Y, br(Z, X)), br(Z, br(X, Y)),
                                          strict=True)]
    assert all(p.is_zero for p in total)
    assert any(br(X, br(Y, Z)))


@pytest.mark.parametrize("d", [1, 2, 3, 4])
@pytest.mark.parametrize("name", ["affine", "attention"])
def test_full_rank_at_generic_positive_definite_points(name, d):
    for seed in (0, 1):
        acc = accessibility_rank(name, d, seed=seed)
        assert acc.cov_rank == d
        assert acc.expected == d + d * (d + 1) // 2 == stratum_dimension(d, d)
        assert acc.rank == acc.expected and acc.full
        assert len(acc.words) == acc.rank
        assert np.linalg.matrix_rank(acc.basis) == acc.rank  # the words' values: a basis


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("name", ["affine", "full", "values"])
def test_rank_equals_the_stratum_dimension_on_every_stratum(name, d):
    for r in range(d + 1):
        acc = accessibility_rank(name, d, rank=r)
        assert acc.cov_rank == r
        assert acc.rank == acc.expected == d + r * d - r * (r - 1) // 2


def test_stratum_dimension_counts_the_rank_r_covariances():
    """dim{Σ ⪰ 0 : rank r} = rank of the map L ↦ L Lᵀ's differential X ↦ X Lᵀ + L Xᵀ."""
    rng = np.random.default_rng(0)
    for d in range(1, 6):
        for r in range(d + 1):
            L = rng.standard_normal((d, r))
            cols = []
            for k in range(d * r):
                X = np.zeros(d * r)
                X[k] = 1
                X = X.reshape(d, r)
                cols.append(vech(X @ L.T + L @ X.T))
            tangent = np.linalg.matrix_rank(np.array(cols).T) if cols else 0
            assert stratum_dimension(d, r) == d + tangent


def test_attention_on_rank_one_strata_moves_the_covariance_along_one_field():
    """Held V, Σ = ℓℓᵀ: every covariance velocity is (ℓᵀBℓ)(Vℓℓᵀ + ℓℓᵀVᵀ), so the rank is d + 1
    (mean by the bias, one covariance direction) at any depth, below d + d = 2d."""
    acc = accessibility_rank("attention", 2, rank=1, depth=4)
    assert (acc.rank, acc.expected) == (3, 4)
    assert acc.mean_rank == 2 and not acc.full
    d = 2
    ell = np.linalg.eigh(acc.cov)[1][:, -1] * np.sqrt(np.linalg.eigvalsh(acc.cov)[-1])
    V = acc.fixed["V"]
    direction = vech(V @ np.outer(ell, ell) + np.outer(ell, ell) @ V.T)
    cov_parts = acc.basis[:, d:]
    assert np.linalg.matrix_rank(np.vstack([cov_parts, direction]), tol=1e-9) == 1


def test_affine_without_bias_keeps_the_mahalanobis_norm_of_the_mean():
    """At Σ ≻ 0 the span misses one direction: the gradient of I(m, Σ) = mᵀΣ⁻¹m annihilates it."""
    for d in (1, 2, 3):
        acc = accessibility_rank("affine-nobias", d)
        assert acc.rank == acc.expected - 1
        m, S = acc.mean, acc.cov
        Si = np.linalg.inv(S)
        grad_S = -np.outer(Si @ m, Si @ m)  # ∂I/∂Σ_ij, counted twice off the diagonal
        grad = np.concatenate([2 * Si @ m, [grad_S[i, j] * (1 if i == j else 2)
                                            for i in range(d) for j in range(i + 1)]])
        assert np.max(np.abs(acc.basis @ grad)) < 1e-9 * np.max(np.abs(acc.basis)) * \
            np.max(np.abs(grad))


def test_centred_start_without_bias_is_explained():
    acc = accessibility_rank("values-nobias", 2, point=(np.zeros(2), np.diag([1.0, 2.0])))
    assert acc.mean_rank == 0 and acc.rank == 3 < acc.expected == 5
    text = acc.explain()
    assert "m = 0 is invariant" in text and "3 of the 5" in text
    generic = accessibility_rank("values-nobias", 2, point=(np.ones(2), np.diag([1.0, 2.0])))
    assert generic.full and "rank condition holds" in generic.explain()


def test_rational_point_keeps_the_numerical_rank(rng):
    L = rng.standard_normal((3, 2))
    _, cov, r = rational_point(Gaussian(rng.standard_normal(3), L @ L.T), 3)
    assert r == 2 and exact_rank(cov.tolist()) == 2
    np.testing.assert_allclose(np.array(cov, float), L @ L.T, atol=1e-10)
    _, cov_exact, r = rational_point((np.zeros(2), np.diag([0.5, 0.0])), 2)
    assert r == 1 and cov_exact[0, 0] == Fraction(1, 2)  # simple entries stay exact


def test_fixed_parameters_change_the_system():
    """A held feed-forward A adds a drift; with it attention gains the rank-1 stratum of d = 2."""
    A = np.array([[0.5, -1.0], [1.0, 0.25]])
    acc = accessibility_rank("attention", 2, rank=1, fixed={"A": A})
    assert acc.full
    assert np.allclose(control_system("attention", 2, fixed={"A": A}).fixed["A"], A)


def test_invalid_inputs_are_refused():
    with pytest.raises(InvalidInputError, match="controls must be one of"):
        accessibility_rank("attn", 2)
    with pytest.raises(InvalidInputError, match="is a control"):
        control_system("affine", 2, fixed={"A": np.eye(2)})
    with pytest.raises(InvalidInputError, match="unknown parameter"):
        control_system("affine", 2, fixed={"Q": np.eye(2)})
    with pytest.raises(InvalidInputError, match="rank must be ≤ d"):
        accessibility_rank("affine", 2, rank=3)
    with pytest.raises(InvalidInputError, match="depth"):
        accessibility_rank("affine", 2, depth=0)
    with pytest.raises(InvalidInputError, match="2×2"):
        control_system("attention", 2, fixed={"V": np.eye(3)})


@pytest.mark.parametrize("point, field", [
    ((["1", "2"], np.eye(2)), "mean"),
    (([True, False], np.eye(2)), "mean"),
    (([1j, 2.0], np.eye(2)), "mean"),
    ((np.zeros(2), np.array([["1", "0"], ["0", "1"]], dtype=object)), "cov"),
    ((np.zeros(2), np.array([[-np.inf, 0], [0, 1]], dtype=object)), "cov"),
    ("ab", "point"),
])
def test_points_go_through_the_validation_path(point, field):
    """Strings, booleans, complex numbers and infinities are refused, never parsed or cast."""
    with pytest.raises(InvalidInputError, match=field):
        accessibility_rank("affine", 2, point)


def test_rational_points_keep_their_meaning():
    """Fractions and ints are kept exactly; a float is rationalised relative to its size, so
    subnormal and huge entries keep their rank (Σ = 1e-310·I is the full-rank stratum)."""
    cov = np.array([[Fraction(1, 3), 1], [1, Fraction(7, 2)]], dtype=object)
    mean, exact, r = rational_point(([Fraction(-2, 7), 5], cov), 2)
    assert r == 2 and exact[0, 0] == Fraction(1, 3) and exact[1, 1] == Fraction(7, 2)
    assert list(mean) == [Fraction(-2, 7), 5]
    for scale in (1e-310, 1e300):
        _, exact, r = rational_point((np.zeros(2), scale * np.diag([1.0, 2.0])), 2)
        assert r == 2 and exact_rank(exact.tolist()) == 2
        assert abs(float(exact[1, 1]) / (2 * scale) - 1) < 1e-15
        acc = accessibility_rank("affine", 2, (np.zeros(2), scale * np.eye(2)))
        assert acc.rank == acc.expected == 5


def test_fixed_must_name_holdable_parameters():
    """fixed is a mapping from the configuration's non-control parameters; the error lists them."""
    for bad in (5, "A", [("A", np.eye(2))]):
        with pytest.raises(InvalidInputError, match=r"mapping .*A, V"):
            control_system("attention", 2, fixed=bad)
    with pytest.raises(InvalidInputError, match="held are A, V"):
        control_system("attention", 2, fixed={"B": np.eye(2)})
    with pytest.raises(InvalidInputError, match="controls 'values' are A, B"):
        control_system("values", 2, fixed={"W": np.eye(2)})


def test_work_budgets_end_in_clean_errors():
    """d, depth, seed, table size and bracket work are bounded; spending the work is SolverError."""
    with pytest.raises(InvalidInputError, match="max_dimension"):
        accessibility_rank("affine", 6)
    with pytest.raises(InvalidInputError, match="depth must be ≤"):
        accessibility_rank("affine", 2, depth=100)
    with pytest.raises(InvalidInputError, match="seed"):
        accessibility_rank("affine", 2, seed=-1)
    with pytest.raises(InvalidInputError, match="max_rows"):
        accessibility_table([5] * 9)
    with pytest.raises(SolverError, match="max_work"):
        accessibility_rank("values-nobias", 3, depth=6, max_work=1000)
    assert accessibility_rank("affine", 2).work > 0


def test_tangency_bound_and_documented_rows_for_d_up_to_2():
    """The table is computed, not typed: every row for d ≤ 2 appears verbatim in the document;
    no rank exceeds the stratum dimension (the fields are tangent to the strata)."""
    rows = accessibility_table(dims=(1, 2))
    assert all(a.rank <= a.expected for a in rows)
    assert len(rows) == len(CONFIGURATIONS) * (2 + 3)
    doc = DOC.read_text(encoding="utf-8")
    for line in table_markdown(rows).splitlines()[2:]:
        assert line in doc


def test_cli_writes_the_document(tmp_path):
    out = tmp_path / "acc.md"
    assert main(["--table", "--dims", "1", "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "| affine | 1 | 1 | 2 | 2 | yes |" in text


@pytest.mark.slow
def test_document_is_the_generated_table_and_attention_rank_one_in_three_dimensions():
    """docs/accessibility.md equals accessibility_document() (d = 1, 2, 3; about 30 s), and its
    row of attention in d = 3 at rank 1, the call accessibility_rank("attention", 3, rank=1)
    with the table's defaults (depth, seed 0), has rank 4 of 6 (one computation for both:
    the document is written around the rows, as accessibility_document writes it)."""
    rows = accessibility_table((1, 2, 3))
    assert DOC.read_text(encoding="utf-8") == _document(rows, (1, 2, 3), DEFAULT_DEPTH, 0)
    acc = next(a for a in rows if (a.controls, a.d, a.cov_rank) == ("attention", 3, 1))
    assert (acc.rank, acc.expected) == (4, 6)


def test_the_document_is_written_around_the_table():
    assert accessibility_document((1, 2)) == _document(accessibility_table((1, 2)), (1, 2),
                                                       DEFAULT_DEPTH, 0)
