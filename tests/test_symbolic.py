"""The symbolic engine: Gaussian expectations, tilting, derivation, compilation, LaTeX, safety."""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from riccati_tf import Gaussian, Params, moment_rhs
from riccati_tf.errors import InvalidInputError
from riccati_tf.symbolic import (
    MAX_ELEMENT_D,
    clear_caches,
    compile_moment_rhs,
    derive_moment_equations,
    expectation,
    expectations,
    gaussian_symbols,
    isserlis,
    matrix_gaussian,
    relu,
    spec_moment_equations,
    tilt,
    transformer_system,
)
from riccati_tf.symbolic.symbols import DIM, symbol_matrix, symbol_vector

# ----------------------------------------------------------------------------- helpers


def gauss_hermite(mean, cov, n=24):
    """Tensor Gauss–Hermite nodes and weights for N(mean, cov), d ≤ 2 (exact for polynomials of
    degree < 2n)."""
    z, w = np.polynomial.hermite_e.hermegauss(n)
    w = w / w.sum()
    d = len(mean)
    grids = np.meshgrid(*([z] * d), indexing="ij")
    Z = np.stack([g.ravel() for g in grids], axis=1)
    W = np.prod(np.meshgrid(*([w] * d), indexing="ij"), axis=0).ravel()
    L = np.linalg.cholesky(cov)
    return mean + Z @ L.T, W


def numeric_point(d, rng):
    L = rng.standard_normal((d, d))
    return rng.standard_normal(d), L @ L.T + 0.5 * np.eye(d)


def substitute(g, mean, cov):
    sub = {g.mean[i]: mean[i] for i in range(g.d)}
    sub.update({g.cov[i, j]: cov[i, j] for i in range(g.d) for j in range(i, g.d)})
    return sub


def random_params(d, heads, rng, scale=1.0):
    pairs = [(scale * rng.standard_normal((d, d)), scale * rng.standard_normal((d, d)))
             for _ in range(heads)]
    A, b = scale * rng.standard_normal((d, d)), rng.standard_normal(d)
    if heads == 1:
        return Params(A, B=pairs[0][1], V=pairs[0][0], b=b)
    return Params(A, b=b, heads=pairs)


def rel_err(a, b):
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300)


# ----------------------------------------------------------------------------- expectations


def test_isserlis_known_moments():
    S = sp.Matrix(4, 4, lambda i, j: sp.Symbol(f"s{min(i, j)}{max(i, j)}"))
    assert isserlis((0, 0, 0, 0), S) == 3 * S[0, 0] ** 2
    assert sp.expand(isserlis((0, 1, 2, 3), S) - (S[0, 1] * S[2, 3] + S[0, 2] * S[1, 3]
                                                  + S[0, 3] * S[1, 2])) == 0
    assert isserlis((0, 1, 2), S) == 0
    assert isserlis((), S) == 1
    assert isserlis((1,) * 6, S) == 15 * S[1, 1] ** 3  # (6 − 1)!! = 15


monomial = st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(-3, 3))


@settings(max_examples=25, deadline=None)
@given(terms=st.lists(monomial, min_size=1, max_size=4), seed=st.integers(0, 2 ** 16))
def test_polynomial_expectation_matches_gauss_hermite(terms, seed):
    g = gaussian_symbols(2)
    x1, x2 = g.x
    p = sum(c * x1 ** i * x2 ** j for i, j, c in terms)
    mean, cov = numeric_point(2, np.random.default_rng(seed))
    value = float(expectation(p, g).xreplace(substitute(g, mean, cov)))
    X, W = gauss_hermite(mean, cov)
    f = sp.lambdify([x1, x2], p)
    expected = float(W @ np.broadcast_to(f(X[:, 0], X[:, 1]), W.shape))
    assert value == pytest.approx(expected, rel=1e-9, abs=1e-9)


def test_residual_expectations_and_coefficients():
    g = gaussian_symbols(2)
    a, b = sp.symbols("a b")
    e, r = expectations(a * g.x[0] * g.x[1] + b, g, residuals=True)
    m, S = g.mean, g.cov
    assert sp.expand(e - a * (S[0, 1] + m[0] * m[1]) - b) == 0
    assert sp.expand(r[0] - a * (S[0, 0] * m[1] + S[0, 1] * m[0])) == 0


def test_relu_expectation_matches_quadrature():
    g = gaussian_symbols(2)
    u = g.x[0] - 2 * g.x[1] + sp.Rational(1, 3)
    mean, cov = numeric_point(2, np.random.default_rng(3))
    e, r = expectations(3 * relu(u), g, residuals=True)
    sub = substitute(g, mean, cov)
    X, W = gauss_hermite(mean, cov, n=200)  # the kink limits the accuracy: loose tolerance
    val = 3 * np.maximum(X[:, 0] - 2 * X[:, 1] + 1 / 3, 0)
    assert float(e.xreplace(sub)) == pytest.approx(W @ val, rel=1e-4)
    for i in range(2):
        assert float(r[i].xreplace(sub)) == pytest.approx(W @ ((X[:, i] - mean[i]) * val),
                                                          rel=1e-3)


def test_expectation_refuses_what_it_cannot_do():
    g = gaussian_symbols(2)
    with pytest.raises(NotImplementedError):
        expectation(sp.exp(g.x[0]), g)
    with pytest.raises(NotImplementedError):
        expectation(relu(g.x[0] * g.x[1]), g)
    with pytest.raises(NotImplementedError):
        expectation(g.x[0] * relu(g.x[1]), g)
    with pytest.raises(InvalidInputError):
        expectation(g.x[0], matrix_gaussian())


# ----------------------------------------------------------------------------- tilting


@pytest.mark.parametrize("quadratic", [False, True])
def test_tilt_matches_quadrature(quadratic):
    g = gaussian_symbols(2)
    y = list(symbol_vector("y", 2))
    rng = np.random.default_rng(11)
    w = rng.standard_normal(2)
    K = 0.7 * rng.standard_normal((2, 2))
    q = w[0] * y[0] + w[1] * y[1]
    if quadratic:
        Ky = sp.Matrix(K) * sp.Matrix(y)
        q -= (Ky.T * Ky)[0, 0] / 2
    m1, S1 = tilt(q, y, g.mean, g.cov)
    mean, cov = numeric_point(2, rng)
    sub = substitute(g, mean, cov)
    X, W = gauss_hermite(mean, cov, n=60)
    qf = sp.lambdify([y], q)
    weights = W * np.exp(qf([X[:, 0], X[:, 1]]))
    num_mean = weights @ X / weights.sum()
    Xc = X - num_mean
    num_cov = (weights[:, None] * Xc).T @ Xc / weights.sum()
    np.testing.assert_allclose(np.array(m1.xreplace(sub), dtype=float).ravel(), num_mean,
                               rtol=1e-8)
    np.testing.assert_allclose(np.array(S1.xreplace(sub), dtype=float), num_cov, rtol=1e-8)


def test_tilt_refuses_cubic_exponent_and_strings():
    g = gaussian_symbols(1)
    y = sp.Symbol("y")
    with pytest.raises(InvalidInputError):
        tilt(y ** 3, [y], g.mean, g.cov)
    with pytest.raises(InvalidInputError):
        tilt("y**2", [y], g.mean, g.cov)


# ----------------------------------------------------------------------------- derivation


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("heads", [1, 2])
def test_derived_softmax_system_is_spec(d, heads):
    """Must-show 1 (symbolic half): the derived system minus SPEC §2 expands to zero."""
    s = transformer_system(d, heads=heads)
    dm, dS = spec_moment_equations(d, heads)
    assert s.exact
    assert sp.expand(s.dmean - dm) == sp.zeros(d, 1)
    assert sp.expand(s.dcov - dS) == sp.zeros(d, d)


def test_derive_from_callable_matrix_and_matrix_expression():
    g = gaussian_symbols(2)
    M = symbol_matrix("M", 2, 2)
    from_callable = derive_moment_equations(lambda x, m, S: M * x, 2)
    from_matrix = derive_moment_equations(M * g.x, 2)
    assert from_callable.exact and from_matrix.exact
    assert sp.expand(from_callable.dcov - from_matrix.dcov) == sp.zeros(2, 2)
    assert sp.expand(from_matrix.dcov - (M * g.cov + g.cov * M.T)) == sp.zeros(2, 2)
    mg = matrix_gaussian()
    P = sp.MatrixSymbol("P", DIM, DIM)
    sym = derive_moment_equations(P * mg.x + mg.mean, 5)
    assert sym.exact and sym.matrix.jacobian == P
    assert not derive_moment_equations([g.x[0] ** 2, g.x[1]], 2).exact


def test_inputs_are_sympy_objects_never_strings():
    with pytest.raises(InvalidInputError):
        derive_moment_equations(["x_1 + 1"], 1)
    with pytest.raises(InvalidInputError):
        derive_moment_equations("x_1", 1)
    with pytest.raises(InvalidInputError):
        expectation("__import__('os')", gaussian_symbols(1))
    with pytest.raises(InvalidInputError):
        transformer_system(2, kernel="exp")
    with pytest.raises(InvalidInputError):
        transformer_system(2, ffn="gelu")
    with pytest.raises(InvalidInputError):
        transformer_system(2, width=3)


def test_no_string_parsing_in_the_symbolic_package():
    root = pathlib.Path(__file__).resolve().parents[1] / "riccati_tf" / "symbolic"
    pattern = re.compile(r"(?<!def )\beval\(|\bexec\(|parse_expr|sympify|\bS\(\s*[\"']")
    offenders = [f"{p.name}:{i + 1}" for p in root.glob("*.py")
                 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines())
                 if pattern.search(line)]
    assert not offenders


def test_large_d_keeps_the_matrix_form_only():
    s = transformer_system(64)
    assert s.matrix is not None and not s.has_entries
    with pytest.raises(InvalidInputError):
        _ = s.dcov
    assert MAX_ELEMENT_D >= 16


def test_relu_system_is_a_closure():
    s = transformer_system(2, ffn="relu", width=3)
    assert not s.exact
    assert len(s.matrix.features) == 2
    assert s.options["width"] == 3


def test_latex_output():
    s = transformer_system(2, heads=2)
    tex = s.latex()
    assert r"\dot m" in tex and r"\Sigma" in tex and "exact" in tex
    assert s._repr_latex_().startswith("$")
    entries = transformer_system(1).latex("entries")
    assert r"\Sigma_{1,1}" in entries and "A_{1,1}" in entries
    assert "Gaussian closure" in transformer_system(2, ffn="relu").latex()
    with pytest.raises(InvalidInputError):
        s.latex("pdf")


def test_each_relu_feature_is_defined_by_its_own_function():
    """The two ReLU features (mean r_1 and slope D_1) are given by different scalar functions:
    each line names its function after its feature, and no name is defined twice."""
    tex = transformer_system(1, kernel="dot", ffn="relu").latex("matrix")
    defined = re.findall(r"(\\phi_\{[^()]*\})\(\\mu, s\) =", tex)
    assert sorted(defined) == [r"\phi_{D_{1}}", r"\phi_{r_{1}}"]
    for line in tex.split(r" \\ "):
        for name in set(re.findall(r"\\phi_\{([^()]*)\}", line)):
            assert line.lstrip().startswith((name, rf"\left({name}\right)")), line
    assert r"\phi(" not in tex


# ----------------------------------------------------------------------------- compilation


def test_compiled_rhs_matches_moment_rhs_for_d_2_to_64():
    """Must-show 1 (numeric half): compiled callable vs riccati_tf.moment_rhs ≤ 1e-12 relative,
    d = 2…64, one and two heads, at random points."""
    rng = np.random.default_rng(20261129)
    worst = 0.0
    for heads in (1, 2):
        for d in range(2, 65):
            rhs = compile_moment_rhs(transformer_system(d, heads=heads))
            assert rhs.mode == ("elementwise" if d <= 3 else "matrix")
            p = random_params(d, heads, rng)
            mean, cov = numeric_point(d, rng)
            g = Gaussian(mean, cov)
            dm, dS = rhs(p, g)
            dm0, dS0 = moment_rhs(p, g)
            worst = max(worst, rel_err(dm, dm0), rel_err(dS, dS0))
            assert dS.shape == (d, d) and dm.shape == (d,)
    assert worst <= 1e-12


@pytest.mark.parametrize("d", [1, 2, 3])
def test_compile_modes_agree(d):
    rng = np.random.default_rng(d)
    for kw in ({}, {"heads": 2}, {"kernel": "l2"}, {"ffn": "relu"}):
        s = transformer_system(d, **kw)
        heads = kw.get("heads", 1)
        p = random_params(d, heads, rng, 0.5)
        g = Gaussian(*numeric_point(d, rng))
        extra = {}
        if kw.get("kernel") == "l2":
            extra["K"] = rng.standard_normal((d, d))
        if kw.get("ffn") == "relu":
            extra["ffn"] = (rng.standard_normal((d, d)), rng.standard_normal((d, d)),
                            rng.standard_normal(d))
        a = compile_moment_rhs(s, mode="matrix")(p, g, **extra)
        b = compile_moment_rhs(s, mode="elementwise")(p, g, **extra)
        np.testing.assert_allclose(a[0], b[0], rtol=1e-11, atol=1e-12)
        np.testing.assert_allclose(a[1], b[1], rtol=1e-11, atol=1e-12)


def test_l2_rhs_is_the_completed_square():
    rng = np.random.default_rng(5)
    d, heads = 6, 2
    p = random_params(d, heads, rng, 0.5)
    Ks = [rng.standard_normal((d, d)) for _ in range(heads)]
    g = Gaussian(*numeric_point(d, rng))
    dm, dS = compile_moment_rhs(transformer_system(d, heads=heads, kernel="l2"))(p, g, K=Ks)
    M, c = p.A.copy(), p.b.copy()
    for (V, B), K in zip(p.heads, Ks, strict=True):
        inv = np.linalg.inv(np.eye(d) + g.cov @ K.T @ K)
        M += V @ inv @ g.cov @ B
        c += V @ inv @ g.mean
    np.testing.assert_allclose(dm, M @ g.mean + c, rtol=1e-12)
    np.testing.assert_allclose(dS, M @ g.cov + g.cov @ M.T, rtol=1e-12)


def test_relu_rhs_handles_zero_spread():
    """A hidden unit whose pre-activation has no spread (U row orthogonal to the range of Σ)
    takes its limits relu(μ) and 1[μ > 0]."""
    d = 2
    s = transformer_system(d, ffn="relu", width=2)
    p = Params(np.zeros((d, d)))
    g = Gaussian(np.array([1.0, 0.5]), np.diag([1.0, 0.0]))
    W, U, c = np.eye(2), np.array([[0.0, 1.0], [0.0, -1.0]]), np.array([0.2, 0.1])
    dm, dS = compile_moment_rhs(s)(p, g, ffn=(W, U, c))
    np.testing.assert_allclose(dm, [0.7, 0.0])
    np.testing.assert_allclose(dS, np.zeros((2, 2)), atol=1e-15)
    assert np.all(np.isfinite(dS))


def test_compiled_rhs_checks_its_inputs():
    rng = np.random.default_rng(0)
    g = Gaussian(*numeric_point(3, rng))
    one, two = random_params(3, 1, rng), random_params(3, 2, rng)
    rhs = compile_moment_rhs(transformer_system(3, heads=2))
    with pytest.raises(InvalidInputError, match="head"):
        rhs(one, g)
    with pytest.raises(InvalidInputError, match="compiled for d = 3"):
        rhs(random_params(4, 2, rng), Gaussian(*numeric_point(4, rng)))
    with pytest.raises(InvalidInputError, match="K="):
        compile_moment_rhs(transformer_system(3, kernel="l2"))(one, g)
    with pytest.raises(InvalidInputError, match="ffn"):
        compile_moment_rhs(transformer_system(3, ffn="relu"))(one, g)
    with pytest.raises(InvalidInputError, match="K="):
        rhs(two, g, K=np.eye(3))
    with pytest.raises(InvalidInputError):
        compile_moment_rhs(transformer_system(3), mode="fast")
    with pytest.raises(InvalidInputError):
        compile_moment_rhs("not a system")


def test_compiled_code_is_cached_and_exploits_symmetry():
    clear_caches()
    a = compile_moment_rhs(transformer_system(8))
    b = compile_moment_rhs(transformer_system(16))
    assert a._fn is b._fn  # the matrix-form code serves every d
    assert compile_moment_rhs(transformer_system(2))._fn is \
        compile_moment_rhs(transformer_system(2))._fn
    src = a.source
    assert "dot" in src and src.count("Sigma") <= 3  # JΣ is formed outside: one product
    clear_caches()
    assert compile_moment_rhs(transformer_system(8))._fn is not a._fn


def test_custom_field_compiles_and_unbound_symbols_are_named():
    g = gaussian_symbols(2)
    rhs = compile_moment_rhs(derive_moment_equations(-g.x, 2))
    assert rhs.mode == "elementwise"
    rng = np.random.default_rng(1)
    gauss = Gaussian(*numeric_point(2, rng))
    dm, dS = rhs(Params(np.zeros((2, 2))), gauss)
    np.testing.assert_allclose(dm, -gauss.mean)
    np.testing.assert_allclose(dS, -2 * gauss.cov)
    theta = sp.Symbol("theta")
    with pytest.raises(InvalidInputError, match="theta"):
        compile_moment_rhs(derive_moment_equations(theta * g.x, 2))
