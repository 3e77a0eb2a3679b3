"""The scalar blow-up time (SPEC §5, d = 1): σ̇ = 2aσ + 2vbσ².

With g = −2vb the closed form is σ(t) = e^{2at}σ0 / (1 − (vbσ0/a)(e^{2at} − 1)); for vbσ0 > 0 it
blows up at

    T* = log(1 + a/(vbσ0)) / (2a)      (T* = 1/(2vbσ0) when a = 0),

which is finite iff 1 + a/(vbσ0) > 0; for a < 0 this is W∞σ0 > 1 with W∞ = |g|/(2|a|) the
solution of AᵀW∞ + W∞A + |G| = 0 (SPEC §5, "λ_max(W∞Σ0) > 1").

Proved: the derived d = 1 system is σ̇ = 2aσ + 2vbσ² (symbolic); the closed form solves it with
σ(0) = σ0 (symbolic); T* is the root of the denominator (symbolic); the a < 0 criterion (symbolic
identity); the a → 0 limit (symbolic limit); and, as a floating-point cross-check, the blow-up
time reported by riccati_tf.flow(method="exact") at two points (rtol 1e-8).
"""

from __future__ import annotations

import sys

import sympy as sp

from riccati_tf.symbolic import transformer_system

from ._verify import main, numeric_close, symbolic_equal, symbolic_zero

a, v, b, s0 = sp.symbols("a v b sigma_0", real=True, nonzero=True)
t = sp.Symbol("t", positive=True)
SIGMA = sp.exp(2 * a * t) * s0 / (1 - (v * b * s0 / a) * (sp.exp(2 * a * t) - 1))
T_STAR = sp.log(1 + a / (v * b * s0)) / (2 * a)


def claim_derived_scalar_equation():
    s = transformer_system(1)
    g, L = s.gaussian, s.layer
    (V, B), = L.heads
    sub = {L.A[0, 0]: a, V[0, 0]: v, B[0, 0]: b, g.cov[0, 0]: s0}
    return symbolic_equal("derived d = 1 covariance equation = 2aσ + 2vbσ²",
                          s.dcov[0, 0].xreplace(sub), 2 * a * s0 + 2 * v * b * s0 ** 2,
                          method="symbolic, d = 1")


def claim_closed_form():
    rhs = 2 * a * SIGMA + 2 * v * b * SIGMA ** 2
    return [symbolic_zero("σ(t) solves σ̇ = 2aσ + 2vbσ²", SIGMA.diff(t) - rhs,
                          method="symbolic, d = 1"),
            symbolic_equal("σ(0) = σ0", SIGMA.subs(t, 0), s0, method="symbolic, d = 1")]


def claim_blowup_time():
    denominator = sp.fraction(sp.together(SIGMA))[1]
    return symbolic_zero("T* = log(1 + a/(vbσ0))/(2a) zeroes the denominator",
                         denominator.subs(t, T_STAR), method="symbolic, d = 1")


def claim_stable_criterion():
    alpha, vb = sp.symbols("alpha vb", positive=True)  # a = −α < 0, vb > 0
    w_inf = 2 * vb / (2 * alpha)  # |g| / (2|a|), |g| = 2vb
    return symbolic_equal("a < 0: 1 + a/(vbσ0) = 1 − 1/(W∞σ0), W∞ = |g|/(2|a|)",
                          1 + (-alpha) / (vb * s0), 1 - 1 / (w_inf * s0), method="symbolic")


def claim_limit_a_to_zero():
    lim = sp.limit(T_STAR, a, 0)
    sigma0 = s0 / (1 - 2 * v * b * s0 * t)  # a = 0: σ̇ = 2vbσ²
    return [symbolic_equal("lim_{a→0} T* = 1/(2vbσ0)", lim, 1 / (2 * v * b * s0),
                           method="symbolic limit"),
            symbolic_zero("a = 0: σ0/(1 − 2vbσ0 t) solves σ̇ = 2vbσ²",
                          sigma0.diff(t) - 2 * v * b * sigma0 ** 2, method="symbolic")]


def claim_numeric_flow():
    import numpy as np

    from riccati_tf import Gaussian, Params, flow

    out = []
    for av, vv, bv, sv in ((0.5, 1.0, 0.8, 0.7), (-0.3, 2.0, 0.5, 1.5)):
        expected = float(T_STAR.subs({a: av, v: vv, b: bv, s0: sv}))
        traj = flow(Params(np.array([[av]]), B=np.array([[bv]]), V=np.array([[vv]])),
                    Gaussian(np.zeros(1), np.array([[sv]])), 2 * expected, method="exact")
        found = traj.blowup_time if traj.blowup_time is not None else float("nan")
        out.append(numeric_close(f"riccati_tf.flow blow-up time = T* (a = {av})", found, expected,
                                 rtol=1e-8, method="float, riccati_tf.flow exact"))
    return out


CLAIMS = (
    claim_derived_scalar_equation,
    claim_closed_form,
    claim_blowup_time,
    claim_stable_criterion,
    claim_limit_a_to_zero,
    claim_numeric_flow,
)

if __name__ == "__main__":
    sys.exit(main(CLAIMS, __doc__))
