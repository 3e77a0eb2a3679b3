"""`joint_controllability` on multi-head layers against an independent Lie-rank computation.

The independent computation builds the moment equations of SPEC §2 in SymPy with every head's
moving matrix a control of its own ("values": each V_h; "attention": each B_h; b a control),
the drift holding A, b and the other matrices per head, forms every right-normed bracket
[X_1, [X_2, …]] of the generators with SymPy's Jacobians up to a depth, and takes the exact
rank of their values at a rational point (sympy.Matrix.rank over QQ). It shares no code with
riccati_tf.reachability.lie (no pruning, no jets, no sparse rings).
"""

from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from riccati_tf.design.joint import joint_controllability
from riccati_tf.state.params import Gaussian, Params


def _q(x):
    return sp.Rational(Fraction(x).limit_denominator(10**6))


def _qmat(M):
    return sp.Matrix(M.shape[0], M.shape[1], [_q(x) for x in np.asarray(M).ravel()])


def _generators(name, A, pairs, d):
    """(state symbols, [fields]) of configuration `name` around the layer (A, pairs): b is a
    control of both configurations, so the drift holds A and the held matrices only."""
    m = sp.Matrix(sp.symbols(f"m1:{d + 1}"))
    s = {(i, j): sp.Symbol(f"s{i}{j}") for i in range(d) for j in range(i + 1)}
    S = sp.Matrix(d, d, lambda i, j: s[(max(i, j), min(i, j))])
    z = list(m) + [s[(i, j)] for i in range(d) for j in range(i + 1)]

    def field(mean, cov):
        return sp.Matrix(list(mean) + [cov[i, j] for i in range(d) for j in range(i + 1)])

    def unit(i, j):
        E = sp.zeros(d, d)
        E[i, j] = 1
        return E

    pairs = [(_qmat(V), _qmat(B)) for V, B in pairs]
    A = _qmat(A)
    mean, cov = A * m, A * S + S * A.T
    gens = [sp.Matrix([1 if k == i else 0 for k in range(len(z))]) for i in range(d)]  # b_i
    units = [unit(i, j) for i in range(d) for j in range(d)]
    if name == "values":  # V_h move, B_h held
        for _, B in pairs:
            gens += [field(E * m + E * S * B * m, E * S * B * S + S * B.T * S * E.T)
                     for E in units]
    else:  # "attention": B_h move, V_h held
        for V, _ in pairs:
            mean = mean + V * m
            gens += [field(V * S * E * m, V * S * E * S + S * E.T * S * V.T) for E in units]
    return z, [field(mean, cov), *gens]


def independent_rank(name, A, b, pairs, mean, cov, depth):
    """The exact rank at (mean, cov) of the right-normed brackets of length ≤ depth."""
    d = len(mean)
    z, gens = _generators(name, A, pairs, d)
    point = dict(zip(z, [_q(x) for x in mean]
                     + [_q(cov[i, j]) for i in range(d) for j in range(i + 1)], strict=True))
    n = d + d * (d + 1) // 2
    values = [g.subs(point) for g in gens]
    rank = sp.Matrix.hstack(*values).rank()
    level = gens
    for _ in range(depth - 1):
        if rank == n:
            break
        jac = {id(g): g.jacobian(z) for g in gens}
        new = []
        for g in gens:
            for x in level:
                new.append(sp.expand(x.jacobian(z) * g - jac[id(g)] * x))
        level = [f for f in new if any(f)]
        values += [f.subs(point) for f in level]
        rank = sp.Matrix.hstack(*values).rank()
    return rank


def _layer(rng, d, n_heads, scalar):
    A = np.round(rng.standard_normal((d, d)), 2)
    b = np.round(rng.standard_normal(d), 2)
    pairs = []
    for _ in range(n_heads):
        V = (np.round(rng.standard_normal(), 2) * np.eye(d) if scalar
             else np.round(rng.standard_normal((d, d)), 2))
        pairs.append((V, np.round(rng.standard_normal((d, d)), 2)))
    return A, b, pairs


def _point(rng, d):
    L = np.round(rng.standard_normal((d, d)), 1)
    return np.round(rng.standard_normal(d), 1), L @ L.T + np.eye(d)


def _compare(name, A, b, pairs, mean, cov, depth=3):
    """The package's rank is at least the independent one (both lower bounds of the Lie-algebra
    rank, the package's to depth 4), equal when the independent one spans the stratum; a full
    verdict is never contradicted."""
    p = Params(A, b=b, heads=pairs)
    jc = joint_controllability(p, Gaussian(mean, cov), [name])
    assert jc.decided
    got = jc.results[0]
    ref = independent_rank(name, A, b, pairs, mean, cov, depth)
    n = got.expected
    assert got.rank >= ref, (name, got.rank, ref)
    if ref == n:
        assert got.full
    return got, ref


def test_the_quoted_kind_two_scalar_heads_whose_weighted_keys_cancel():
    # V_1 = I, V_2 = 2I with B_2 = −B_1/2: Σ_h v_h B_h = 0, so the single-head form had no
    # covariance field ("rank 3 of 5"); each head's value field moves Σ (its covariance part
    # E ΣB_hΣ + … is non-zero), and the rank is full
    B = np.array([[1.0, 2.0], [0.0, 1.0]])
    pairs = [(np.eye(2), B), (2 * np.eye(2), -B / 2)]
    mean, cov = np.array([1.0, 0.5]), np.array([[2.0, 0.3], [0.3, 1.0]])
    got, ref = _compare("values", -np.eye(2), np.zeros(2), pairs, mean, cov)
    assert got.full and ref == 5
    jc = joint_controllability(Params(-np.eye(2), heads=pairs), Gaussian(mean, cov))
    assert jc.full == (True, True) and "keeps" in jc.reason


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("name", ["values", "attention"])
def test_random_multihead_layers_match_the_independent_rank(name, seed):
    rng = np.random.default_rng(70 + seed)
    A, b, pairs = _layer(rng, 2, 2 + seed % 2, scalar=seed % 2 == 0)
    mean, cov = _point(rng, 2)
    _compare(name, A, b, pairs, mean, cov)


@pytest.mark.parametrize("seed", range(3))
def test_degenerate_multihead_layers_match_the_independent_rank(seed):
    # layers that lose directions: heads whose held keys or values vanish (the covariance
    # moves by the drift alone), heads sharing one key, a rank-one point; the package never
    # reports less than the independent rank (brackets of length ≤ 2 here), and a short rank
    # is worded as not shown, never as lost
    rng = np.random.default_rng(90 + seed)
    A, b, pairs = _layer(rng, 2, 2, scalar=True)
    mean, cov = _point(rng, 2)
    got, _ = _compare("values", A, 0 * b, [(V, 0 * B) for V, B in pairs], mean, cov, depth=2)
    assert not got.full
    got, _ = _compare("attention", 0 * A, 0 * b, [(0 * V, B) for V, B in pairs], mean, cov,
                      depth=2)
    assert not got.full
    jc = joint_controllability(Params(0 * A, heads=[(0 * V, B) for V, B in pairs]),
                               Gaussian(mean, cov), ["attention"])
    assert "not shown" in jc.reason and "loses" not in jc.reason
    same = [(pairs[0][0], pairs[0][1]), (pairs[1][0], pairs[0][1])]
    _compare("values", A, b, same, 0 * mean, cov, depth=2)
    u = np.array([1.0, -2.0])
    _compare("attention", A, b, pairs, mean, np.outer(u, u), depth=2)
