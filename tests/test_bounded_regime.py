"""The bounded regime holds for all t ≥ 0: no "bounded" certificate is contradicted at t = 1e12.

Random layers A = M J M⁻¹ with M an integer unimodular matrix (so M⁻¹ is an integer matrix and
A is exact in floating point) and J block diagonal: rotations ω[[0, −1], [1, 0]] (ω dyadic),
zero eigenvalues and Hurwitz blocks — Lyapunov stable, not Hurwitz — or, for one layer in five,
a Jordan block on iℝ (not Lyapunov stable: e^{At} grows like t). Attention: none, a scalar head
with G ⪰ 0, or a head with B skew (G = 0). Each layer is certified as given and perturbed by
±1e-9 (A ± 1e-9 I and one entry ± 1e-9). Every "bounded" certificate is compared with
λ_max(e^{At}Σ0e^{Aᵀt}) at t = 1e12, computed independently with mpmath's matrix exponential at
50 digits: the solution itself for G = 0, and for G ⪰ 0 an upper bound of it (Σ(t) ⪯
e^{At}Σ0e^{Aᵀt}), so the comparison is then the stronger one; no tolerance is given to the bound.
The full 200 layers are `slow`; the default run takes a subset.
"""

import mpmath as mp
import numpy as np
import pytest

from riccati_tf import Params, certify
from riccati_tf.errors import SolverError

T_FAR = 1e12


def _unimodular(rng, d):
    """An integer matrix of determinant 1: a product of elementary shears I + kE_ij."""
    M = np.eye(d, dtype=np.int64)
    for _ in range(2 * d):
        i, j = rng.choice(d, 2, replace=False)
        E = np.eye(d, dtype=np.int64)
        E[i, j] = rng.integers(-2, 3)
        M = M @ E
    return M


def _blocks(rng, d, jordan):
    """J: at least one centre block (a rotation or a zero), then zeros, rotations and Hurwitz
    blocks; with jordan, a nilpotent or rotation Jordan block on iℝ first."""
    J = np.zeros((d, d))
    k = 0
    if jordan:
        if d >= 4 and rng.random() < 0.5:
            w = float(rng.integers(1, 4))
            R = w * np.array([[0.0, -1.0], [1.0, 0.0]])
            J[:4, :4] = np.block([[R, np.eye(2)], [np.zeros((2, 2)), R]])
            k = 4
        else:
            J[0, 1] = 1.0
            k = 2
    while k < d:
        kind = rng.choice(["rotation", "zero", "stable", "stable2"]) if k else \
            rng.choice(["rotation", "zero"])
        if kind in ("rotation", "stable2") and k + 2 <= d:
            w = float(rng.integers(1, 9)) / 4
            a = 0.0 if kind == "rotation" else -float(rng.integers(1, 5)) / 2
            J[k:k + 2, k:k + 2] = [[a, -w], [w, a]]
            k += 2
        elif kind == "stable":
            J[k, k] = -float(rng.integers(1, 5)) / 2
            k += 1
        else:
            k += 1  # a zero eigenvalue
    return J


def _layer(rng, d, jordan):
    M = _unimodular(rng, d)
    Mi = np.round(np.linalg.inv(M)).astype(np.int64)
    assert np.array_equal(M @ Mi, np.eye(d, dtype=np.int64))
    A = M @ _blocks(rng, d, jordan) @ Mi  # exact: dyadic entries times small integers
    attention = rng.choice(["none", "psd", "skew"])
    if attention == "none":
        return Params(A)
    C = rng.integers(-2, 3, (d, d)).astype(float)
    if attention == "psd":  # V = −I, B = CᵀC/4: G = −v(B + Bᵀ) = CᵀC/2 ⪰ 0 exactly
        return Params(A, B=C.T @ C / 4, V=-np.eye(d))
    return Params(A, B=C - C.T, V=np.eye(d))  # B skew: G = 0


def _start(rng, d):
    L = rng.integers(-2, 3, (d, d)).astype(float) + 2 * np.eye(d)
    return L @ L.T / 4


def _perturbed(rng, p):
    """A ± 1e-9 I and A with one entry ± 1e-9."""
    d = p.d
    i, j = rng.integers(0, d, 2)
    E = np.zeros((d, d))
    E[i, j] = 1e-9 * rng.choice([-1.0, 1.0])
    return [Params(p.A + s, heads=p.heads) for s in (1e-9 * np.eye(d), -1e-9 * np.eye(d), E)]


def linear_top(A, S0, t, dps=50):
    """λ_max(e^{At}Σ0e^{Aᵀt}) by mpmath's expm at `dps` digits."""
    with mp.workdps(dps):
        E = mp.expm(mp.matrix(A.tolist()) * t)
        X = E * mp.matrix(S0.tolist()) * E.T
        X = (X + X.T) / 2
        return max(mp.eigsy(X)[0])


def _run(n, seed):
    """Certify n random layers and their perturbations; every "bounded" certificate checked at
    T_FAR. Returns (how many Lyapunov-stable layers are bounded, how many there are, how many
    Jordan layers are bounded). A SolverError (equilibria.mean_equilibrium's solve with a K*
    singular in floating point, on A − 1e-9 I without attention) is counted, at most n/20."""
    rng = np.random.default_rng(seed)
    stable_bounded = stable = jordan_bounded = refused = 0
    for i in range(n):
        d = int(rng.integers(2, 5))
        jordan = i % 5 == 4
        p = _layer(rng, d, jordan)
        S0 = _start(rng, d)
        for q in [p, *_perturbed(rng, p)]:
            try:
                c = certify(q, S0)
            except SolverError:  # a clean refusal states nothing (see the report of `_run`)
                refused += 1
                continue
            assert c.check(), c.reason
            if c.regime != "bounded":
                continue
            top = linear_top(q.A, S0, T_FAR)
            assert top <= c.bound, (i, q.A.tolist(), float(top), c.bound)
            assert c.exact and c.global_ and c.tolerance is None
            if q is p and jordan:
                jordan_bounded += 1
        if not jordan:
            stable += 1
            stable_bounded += certify(p, S0).regime == "bounded"
    assert refused <= n // 20, refused
    return stable_bounded, stable, jordan_bounded


def test_the_reference_sees_growth():
    """The reference resolves both kinds of growth at T_FAR: an eigenvalue at +1e-9 (factor
    e^{2000}) and a Jordan block on the axis (factor ~t²), and a rotation's invariance."""
    S0 = np.diag([1.0, 2.0])
    rot = np.array([[0.0, -1.0], [1.0, 0.0]])
    assert abs(linear_top(rot, S0, T_FAR) - 2) < 1e-30
    assert linear_top(rot + 1e-9 * np.eye(2), S0, T_FAR) > mp.mpf("1e800")
    assert linear_top(np.array([[0.0, 1.0], [0.0, 0.0]]), S0, T_FAR) > 1e23


def test_no_bounded_certificate_is_contradicted_at_t_1e12():
    stable_bounded, stable, jordan_bounded = _run(5, seed=1)
    assert jordan_bounded == 0
    assert stable_bounded >= stable // 2, (stable_bounded, stable)


@pytest.mark.long  # 200 layers × 3 perturbations, 50-digit expm: make test-long
def test_no_bounded_certificate_is_contradicted_at_t_1e12_200_layers():
    stable_bounded, stable, jordan_bounded = _run(200, seed=2)
    assert jordan_bounded == 0
    assert stable_bounded >= stable // 2, (stable_bounded, stable)


def test_the_d7_layer_of_the_report_is_not_bounded():
    """d = 7: a rotation with real part +1e-9 among stable modes, V = 0. The old numerical
    witness passed λ_min(−(AᵀS + SA)) ≥ −1e-8‖A‖‖S‖ and stated a bound that λ_max(Σ(t)) exceeds
    by 2.4e8 at t = 1e10; now "bounded" needs an exact witness, and this A has none."""
    rng = np.random.default_rng(7)
    J = np.diag([0.0, 0.0, -1.0, -0.5, -2.0, -1.5, -0.25])
    J[:2, :2] = [[1e-9, -1.0], [1.0, 1e-9]]
    Q, _ = np.linalg.qr(rng.standard_normal((7, 7)))
    A = Q @ J @ Q.T
    S0 = np.eye(7)
    c = certify(Params(A), S0)
    assert c.regime != "bounded" and c.check(), c.reason
    assert float(linear_top(A, S0, 1e10, dps=30)) > 1e8
