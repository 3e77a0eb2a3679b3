"""Hostile cases for `certify` (area "certify"): data whose premises hold only up to rounding,
tiny variances along unstable directions, eigenvalues of A next to the imaginary axis, the
borderline λ_max(W∞Σ0) = 1, huge and tiny scales, general value matrices, overflow.

Every case ends in a clean error or in a certificate that
- passes its own `check()`;
- if exact, has premises that hold in exact rational arithmetic on the floats as given (G is
  recomputed here from B and V with Fraction, its sign decided by principal minors, A's
  Hurwitz-ness by an exact Lyapunov solve) — code independent of the package's;
- has a verdict that an independent reference confirms: the closed form of the decoupled scalar
  equations σ̇ = 2aσ − gσ² in mpmath for diagonal data, or a DOP853 integration (rtol 1e-12) of
  Σ̇ = AΣ + ΣAᵀ + Σ_h(V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ) written here; for "blows_up", T* to 1e-6.
"undetermined" is accepted only where a case says so (premises at the rounding level); it must
then be numerical (exact=False).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction

import mpmath as mp
import numpy as np
from scipy.integrate import solve_ivp

from riccati_tf import Params, certify

from . import case, cases_of

AREA = "certify"
T_RTOL = 1e-6


# ---------------------------------------------------------------- references


@dataclass(frozen=True)
class Ref:
    """The true behaviour: kind in {"blows_up", "grows", "converges", "collapses"}, T* for a
    blow-up, the limit Σ* for "converges"."""

    kind: str
    T: float | None = None
    limit: np.ndarray | None = None


def exact_g(p: Params) -> list[Fraction]:
    """Diagonal of G = −Σ_h v_h (B_h + B_hᵀ) for diagonal B_h, exact."""
    return [sum((-Fraction(float(V[0, 0])) * 2 * Fraction(float(B[i, i])) for V, B in p.heads),
                Fraction(0)) for i in range(p.d)]


def diag_ref(p: Params, S0: np.ndarray) -> Ref:
    """Decoupled σ̇_i = 2a_iσ_i − g_iσ_i² (diagonal A, B_h, Σ0; V_h = v_h I): blow-up where
    1 + σ0 g (e^{2at} − 1)/(2a) = 0, i.e. T = ln(1 − 2a/(σ0 g))/(2a) (T = 1/(σ0|g|) for a = 0),
    evaluated in mpmath at 60 digits from the exact rationals."""
    times, grows, limit = [], False, np.zeros(p.d)
    with mp.workdps(60):
        for i, g in enumerate(exact_g(p)):
            a, s = mp.mpf(float(p.A[i, i])), mp.mpf(float(S0[i, i]))
            g = mp.mpf(g.numerator) / g.denominator
            if s == 0:
                continue
            if g < 0 and (a >= 0 or s * (-g) > 2 * (-a)):
                times.append(1 / (s * -g) if a == 0 else mp.log1p(-2 * a / (s * g)) / (2 * a))
            elif g < 0 and s * (-g) == 2 * (-a):
                limit[i] = float(s)  # σ0 is an equilibrium
            elif a > 0 and g > 0:
                limit[i] = float(2 * a / g)
            elif a > 0 or (a == 0 and g == 0):
                grows = grows or a > 0
                limit[i] = float(s) if a == 0 else 0.0
    if times:
        return Ref("blows_up", float(min(times)))
    if grows:
        return Ref("grows")
    return Ref("converges", limit=np.diag(limit)) if np.any(limit) else Ref("collapses")


def field(p: Params, S: np.ndarray) -> np.ndarray:
    out = p.A @ S + S @ p.A.T
    for V, B in p.heads:
        W = V @ S @ B @ S
        out = out + W + W.T
    return out


def ode_ref(p: Params, S0: np.ndarray, t_end: float) -> tuple[str, float | None, np.ndarray]:
    """DOP853 (rtol 1e-12) on the factor L of Σ = LLᵀ, L̇ = M(Σ)L with M = A + Σ_h V_hΣB_h
    (then Σ̇ = MΣ + ΣMᵀ is the moment equation, and Σ stays PSD of its rank). Stops when
    tr Σ = 1e10 max(tr Σ0, 1): a blow-up when the quadratic terms make up ≥ 90% of d tr Σ/dt,
    with T* = t + tr Σ/(d tr Σ/dt) (Σ ~ 1/(T* − t)); otherwise "large" (growth). Returns
    (status, T*, Σ at the end) with status "blowup", "large" or "completed"."""
    d = p.d
    e, U = np.linalg.eigh(S0)
    keep = e > 0
    L0 = U[:, keep] * np.sqrt(e[keep])
    r = L0.shape[1]
    top = 1e10 * max(np.trace(S0), 1.0)

    def cov(y):
        L = y.reshape(d, r)
        return L @ L.T

    def rhs(_t, y):
        S = cov(y)
        M = p.A + sum(V @ S @ B for V, B in p.heads)
        return (M @ y.reshape(d, r)).ravel()

    def event(_t, y):
        return np.trace(cov(y)) - top

    event.terminal, event.direction = True, 1
    sol = solve_ivp(rhs, (0.0, t_end), L0.ravel(), method="DOP853", rtol=1e-12,
                    atol=1e-14 * np.sqrt(max(np.trace(S0), 1e-300)), events=event)
    assert sol.status >= 0, f"reference integration failed: {sol.message}"
    if sol.status == 1:
        S = cov(sol.y_events[0][0])
        rate = np.trace(field(p, S))
        quad = rate - 2 * np.trace(p.A @ S)
        if quad >= 0.9 * rate:
            return "blowup", float(sol.t_events[0][0] + np.trace(S) / rate), S
        return "large", None, S
    return "completed", None, cov(sol.y[:, -1])


# ---------------------------------------------------------------- exact premises


def q(X) -> list[list[Fraction]]:
    return [[Fraction(float(x)) for x in row] for row in np.asarray(X, dtype=float)]


def det(M: list[list[Fraction]]) -> Fraction:
    """Exact determinant by fraction Gaussian elimination."""
    M = [row[:] for row in M]
    n, out = len(M), Fraction(1)
    for k in range(n):
        piv = next((i for i in range(k, n) if M[i][k] != 0), None)
        if piv is None:
            return Fraction(0)
        if piv != k:
            M[k], M[piv] = M[piv], M[k]
            out = -out
        out *= M[k][k]
        for i in range(k + 1, n):
            f = M[i][k] / M[k][k]
            M[i] = [x - f * y for x, y in zip(M[i], M[k], strict=True)]
    return out


def minors(M, idx) -> Fraction:
    return det([[M[i][j] for j in idx] for i in idx])


def psd(M) -> bool:
    """Exact: every principal minor ≥ 0."""
    n = len(M)
    return all(minors(M, idx) >= 0 for k in range(1, n + 1)
               for idx in itertools.combinations(range(n), k))


def pd(M) -> bool:
    """Exact (Sylvester): every leading principal minor > 0."""
    return all(minors(M, range(k)) > 0 for k in range(1, len(M) + 1))


def neg(M):
    return [[-x for x in row] for row in M]


def hurwitz(A) -> bool:
    """Exact: AᵀX + XA = −I has a solution X ≻ 0 (Lyapunov), solved as a d²-system."""
    n = len(A)
    rows, rhs = [], []
    for i, j in itertools.product(range(n), range(n)):
        row = [Fraction(0)] * (n * n)
        for k in range(n):
            row[k * n + j] += A[k][i]  # (AᵀX)_ij = Σ_k A_ki X_kj
            row[i * n + k] += A[k][j]  # (XA)_ij = Σ_k X_ik A_kj
        rows.append(row)
        rhs.append(Fraction(-1 if i == j else 0))
    aug = [[*r, b] for r, b in zip(rows, rhs, strict=True)]
    m = n * n
    for c in range(m):  # Gauss–Jordan
        piv = next((r for r in range(c, m) if aug[r][c] != 0), None)
        if piv is None:
            return False  # λ_i + λ_j = 0: not Hurwitz
        aug[c], aug[piv] = aug[piv], aug[c]
        aug[c] = [x / aug[c][c] for x in aug[c]]
        for r in range(m):
            if r != c and aug[r][c] != 0:
                f = aug[r][c]
                aug[r] = [x - f * y for x, y in zip(aug[r], aug[c], strict=True)]
    X = [[aug[i * n + j][m] for j in range(n)] for i in range(n)]
    return pd(X)


def marginally_stable(A) -> bool:
    """Exact (SymPy eigenvectors): every Re λ ≤ 0, those on iℝ with as many eigenvectors as
    their multiplicity (e^{At} bounded)."""
    import sympy

    M = sympy.Matrix([[sympy.Rational(x.numerator, x.denominator) for x in row] for row in A])
    for lam, mult, vecs in M.eigenvects():
        re = sympy.re(lam)
        if re > 0 or (re == 0 and len(vecs) < mult):
            return False
    return True


def observable(A, G) -> bool:
    """Exact (SymPy rank): [G; GA; …; GA^{d−1}] has rank d."""
    import sympy

    def mat(M):
        return sympy.Matrix([[sympy.Rational(x.numerator, x.denominator) for x in r] for r in M])

    Am, Gm = mat(A), mat(G)
    return sympy.Matrix.vstack(*[Gm * Am ** k for k in range(Am.rows)]).rank() == Am.rows


def exact_G(p: Params):
    G = [[Fraction(0)] * p.d for _ in range(p.d)]
    for V, B in p.heads:
        v, Bq = Fraction(float(V[0, 0])), q(B)
        for i, j in itertools.product(range(p.d), range(p.d)):
            G[i][j] -= v * (Bq[i][j] + Bq[j][i])
    return G


def check_exact_premises(c) -> None:
    """An exact certificate's premises, re-decided here in rational arithmetic."""
    p = c.params
    assert c.tolerance is None, "an exact certificate records no tolerance"
    for V, _ in p.heads:
        assert not np.any(V - V[0, 0] * np.eye(p.d)), "exact, but V is not exactly scalar"
    if c.theorem == "zero":
        assert not np.any(c.cov0)
        return
    G = exact_G(p)
    th = c.theorem
    assert th in ("psd_hurwitz", "psd_marginal", "psd_gramian_pd", "psd_gramian_singular",
                  "nsd_unstable_range", "nsd_threshold"), f"exact certificate with theorem {th!r}"
    if th.startswith("psd"):
        assert psd(G), f"{th}: G ⪰ 0 is false in exact arithmetic"
    if th == "psd_hurwitz":
        assert hurwitz(q(p.A)), "psd_hurwitz: A is not Hurwitz in exact arithmetic"
    if th in ("psd_gramian_pd", "psd_gramian_singular"):
        assert pd(q(c.cov0)), f"{th}: Σ0 ≻ 0 is false in exact arithmetic"
        assert not hurwitz(q(p.A))
    if th == "psd_marginal":
        assert observable(q(p.A), G), "psd_marginal: (A, G) is not observable"
        assert marginally_stable(q(p.A)), "psd_marginal: e^{At} is not bounded"
    if th == "nsd_unstable_range":
        assert pd(neg(G)), "nsd_unstable_range: G ≺ 0 is false in exact arithmetic"
    if th == "nsd_threshold":
        assert psd(neg(G)), "nsd_threshold: G ⪯ 0 is false in exact arithmetic"


# ---------------------------------------------------------------- judging


def judge(p: Params, S0, ref: Ref | None, *, undetermined_ok: bool = False,
          ode_horizon: float | None = None):
    """certify(p, S0), then: check() True; exact premises; verdict = reference. With ref None
    the reference is the DOP853 integration up to ode_horizon (blow-up or growth/convergence)."""
    S0 = np.asarray(S0, dtype=float)
    c = certify(p, S0)
    assert c.check(), f"certificate returned with check() False: {c.regime}, {c.reason}"
    if c.exact:
        check_exact_premises(c)
    if c.regime == "undetermined":
        assert undetermined_ok, f"undetermined where the answer is known: {c.reason}"
        assert not c.exact and not c.global_
        return c
    if ref is None:
        ref = _ode_verdict(p, S0, c, ode_horizon)
    assert c.regime == ref.kind, f"{c.regime} (exact={c.exact}, {c.theorem}) but the " \
                                 f"reference says {ref.kind}: {c.reason}"
    if ref.kind == "blows_up":
        assert abs(c.blowup_time - ref.T) <= T_RTOL * ref.T, \
            f"T* = {c.blowup_time!r}, reference {ref.T!r}"
    if ref.kind == "converges" and ref.limit is not None:
        err = np.linalg.norm(c.equilibrium.cov - ref.limit)
        assert err <= 1e-6 * np.linalg.norm(ref.limit), f"Σ* off by {err:.3g}"
    return c


def _ode_verdict(p: Params, S0, c, horizon) -> Ref:
    """Reference verdict from the DOP853 integration, for the regime the certificate claims."""
    if c.regime == "blows_up":
        status, T, _ = ode_ref(p, S0, 1.5 * c.blowup_time)
        assert status == "blowup", "the reference integration does not blow up"
        return Ref("blows_up", T)
    status, _, final = ode_ref(p, S0, horizon)
    assert status != "blowup", "the reference integration blows up"
    if c.regime == "grows":
        assert status == "large" or np.trace(final) >= 1e6 * np.trace(S0), \
            "the reference does not grow"
        return Ref("grows")
    assert status == "completed", "the reference grows without bound"
    if c.regime == "converges":
        return Ref("converges", limit=final)
    if c.regime == "collapses":
        assert np.linalg.norm(final) <= 1e-6 * np.linalg.norm(S0), "the reference does not decay"
    return Ref(c.regime)


def rotation(d: int, seed: int) -> np.ndarray:
    Q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))
    return Q


def scalar_layer(A, G, v=1.0) -> Params:
    """V = vI, B = −G/(2v): G = −v(B + Bᵀ) (up to the rounding of the division)."""
    G = np.asarray(G, dtype=float)
    return Params(np.asarray(A, dtype=float), B=-G / (2 * v), V=v * np.eye(G.shape[0]))


def diag_layer(a, g, v=1.0) -> Params:
    return scalar_layer(np.diag(np.asarray(a, dtype=float)), np.diag(np.asarray(g, dtype=float)),
                        v)


# ---------------------------------------------------------------- the reported examples


@case(AREA, "result")
def reported_tiny_variance_along_unstable_direction():
    """Σ0 = diag(1, 1e-16), A = diag(−1, 5), G = −2I: rank 2 as given; blow-up at 3.845."""
    p = Params(np.diag([-1.0, 5.0]), B=np.eye(2), V=np.eye(2))
    c = judge(p, np.diag([1.0, 1e-16]), diag_ref(p, np.diag([1.0, 1e-16])))
    assert c.regime == "blows_up" and c.exact and abs(c.blowup_time - 3.845) < 1e-3


@case(AREA, "either")
def reported_psd_only_up_to_rounding_rotated():
    """A = Q diag(1, 2) Qᵀ, G = Q diag(1, −2e-16) Qᵀ in floats: G is indefinite in exact
    arithmetic, so no exact "grows"; the flow blows up late (t ≈ 40)."""
    Q = rotation(2, 0)
    A, G = Q @ np.diag([1.0, 2.0]) @ Q.T, Q @ np.diag([1.0, -2e-16]) @ Q.T
    p = scalar_layer(A, 0.5 * (G + G.T))
    c = judge(p, np.eye(2), None, undetermined_ok=True, ode_horizon=60.0)
    assert not (c.exact and c.regime in ("grows", "converges"))


@case(AREA, "result")
def reported_sign_rtol_decided_indefinite():
    """G = diag(1, −1e-13): blow-up at T* = ½ ln(1 + 2/ε) = 15.31, not "grows"."""
    p = Params(np.eye(2), B=np.diag([1.0, -1e-13]), V=-0.5 * np.eye(2))
    c = judge(p, np.eye(2), diag_ref(p, np.eye(2)))
    assert abs(c.blowup_time - 0.5 * np.log1p(2 / 1e-13)) < 1e-6 * c.blowup_time


@case(AREA, "result")
def reported_empty_equilibria_index_error():
    p = Params(np.eye(2), B=np.diag([1.0, -5e-13]), V=-0.5 * np.eye(2))
    judge(p, np.eye(2), diag_ref(p, np.eye(2)))


@case(AREA, "either")
def reported_huge_entries():
    p = Params(1e150 * np.eye(2), B=np.eye(2), V=np.eye(2))
    judge(p, np.eye(2), diag_ref(p, np.eye(2)), undetermined_ok=True)


@case(AREA, "either", timeout=30)
def reported_huge_triangular_no_hang():
    """A = [[1e150, 1], [0, −1e150]]: the coupling 1 is 1e-300 of the diagonal, so T* is that
    of the diagonal problem to far better than 1e-6."""
    A = np.array([[1e150, 1.0], [0.0, -1e150]])
    p = Params(A, B=np.eye(2), V=np.eye(2))
    judge(p, np.eye(2), diag_ref(Params(np.diag(np.diag(A)), B=np.eye(2), V=np.eye(2)),
                                 np.eye(2)), undetermined_ok=True)


@case(AREA, "either", timeout=30)
def reported_huge_triangular_general_v():
    A = np.array([[1e150, 1.0], [0.0, -1e150]])
    c = certify(Params(A, B=np.eye(2), V=np.diag([1.0, 2.0])), np.eye(2))
    assert c.check() and not c.exact
    assert c.regime in ("blows_up", "undetermined"), c.reason  # e₁ grows, attention same sign


# ---------------------------------------------------------------- G semidefinite up to rounding


def rounding_case(spec):
    """A = Q diag(a) Qᵀ, G = Q diag(g) Qᵀ in floats (d = len(a)), V = vI, Σ0 = I (exactly I, so
    rotation invariant). The exact G differs from the rotated diag(g) by rounding: no exact
    theorem may rest on a sign that rounding decides."""
    a, g, seed, v = spec
    d = len(a)
    Q = rotation(d, seed)
    G = Q @ np.diag(g) @ Q.T
    p = scalar_layer(Q @ np.diag(a) @ Q.T, 0.5 * (G + G.T), v)
    gmin = min(g)
    horizon = 40.0 / min(abs(x) for x in a)
    c = judge(p, np.eye(d), None, undetermined_ok=abs(gmin) < 1e-11 * max(map(abs, g)),
              ode_horizon=horizon)
    if c.exact and c.theorem.startswith("psd"):
        assert psd(exact_G(p))


cases_of(AREA, "either", {
    f"rounding_G_d{len(a)}_{label}": (a, g, seed, v)
    for label, a, g, seed, v in [
        ("psd_antistable_eps0", [1.0, 2.0], [1.0, 0.0], 1, 1.0),
        ("psd_antistable_m1e-17", [1.0, 2.0], [1.0, -1e-17], 2, -0.5),
        ("psd_antistable_p1e-17", [1.0, 2.0], [1.0, 1e-17], 3, 2.0),
        ("indef_1e-14", [0.5, 1.5, 1.0], [1.0, 2.0, -1e-14], 4, 1.0),
        ("indef_1e-12", [1.0, 2.0, 3.0], [2.0, -1e-12, 1.0], 5, -1.0),
        ("mixed_m2e-16", [1.0, -1.0, 2.0, -0.5], [1.0, 1.0, -2e-16, 3.0], 6, 1.0),
        ("hurwitz_m1e-16", [-1.0, -2.0, -0.5, -3.0], [1.0, -1e-16, 2.0, 1.0], 7, 1.0),
        ("nsd_p1e-16", [-1.0, -2.0, -0.7], [-1.0, 1e-16, -2.0], 8, 1.0),
        ("d5_indef_1e-13", [1.0, 0.5, -1.0, 2.0, -2.0], [1.0, 1.0, 1.0, -1e-13, 2.0], 9, 1.0),
        ("d5_psd_m1e-18", [1.0, 0.5, 1.5, 2.0, 0.8], [1.0, 1.0, 1.0, -1e-18, 2.0], 10, 1.0),
    ]
}, rounding_case)


def eps_diag_case(spec):
    """Diagonal G with an exact small negative entry −ε on an anti-stable mode: blow-up at
    T* = ln(1 + 2a/(σ0 ε))/(2a), never "grows" or "converges"."""
    a, eps, s0 = spec
    p = diag_layer([a, 0.5 * a], [1.0, -eps])
    S0 = np.diag([1.0, s0])
    c = judge(p, S0, diag_ref(p, S0))
    assert c.regime == "blows_up"


cases_of(AREA, "result", {
    f"indefinite_eps_{eps:g}_a{a:g}": (a, eps, s0)
    for a, eps, s0 in [(1.0, 1e-13, 1.0), (2.0, 1e-10, 0.5), (0.3, 1e-12, 3.0), (1.0, 4e-16, 1.0),
                       (5.0, 1e-15, 2.0)]
}, eps_diag_case)


# ---------------------------------------------------------------- tiny variances


def tiny_variance_case(spec):
    """G ≺ 0 with a stable mode that alone would not blow up and a tiny variance σ along an
    unstable mode: blow-up (nsd_unstable_range) at ln(1 + 2a/(σ|g|))/(2a); σ = 0 exactly puts
    range Σ0 inside the stable subspace (nsd_threshold)."""
    a_unstable, sigma, rotated = spec
    p = diag_layer([-1.0, a_unstable, -2.0], [-1.0, -1.0, -0.5])
    S0 = np.diag([1.0, sigma, 0.5])
    extreme = 0 < sigma < 1e-290  # W(T*) ~ 1/σ overflows float64: undetermined is honest
    if not rotated:
        judge(p, S0, diag_ref(p, S0), undetermined_ok=extreme)
        return
    # rotate the data exactly: a permutation keeps every float exact
    P = np.eye(3)[[2, 0, 1]]
    pr = Params(P @ p.A @ P.T, B=P @ p.B @ P.T, V=p.V)
    judge(pr, P @ S0 @ P.T, diag_ref(p, S0), undetermined_ok=extreme)


cases_of(AREA, "result", {
    f"tiny_variance_{s:g}_a{a:g}{'_perm' if r else ''}": (a, s, r)
    for a, s, r in [(5.0, 1e-16, False), (0.5, 1e-20, False), (3.0, 1e-30, True),
                    (1.0, 1e-300, False), (2.0, 5e-324, True), (1.0, 0.0, False),
                    (0.2, 1e-17, True)]
}, tiny_variance_case)


@case(AREA, "result")
def tiny_variance_rotated_full_rank_opposite_sign():
    """G ≻ 0 (no blow-up), A anti-stable, Σ0 ≻ 0 with eigenvalue 1e-16: converges to the
    stabilizing Σ* = Q diag(2a/g) Qᵀ for diagonal data in a permuted basis."""
    p = diag_layer([1.0, 2.0, 0.5], [1.0, 4.0, 0.25])
    S0 = np.diag([1.0, 1e-16, 2.0])
    c = judge(p, S0, diag_ref(p, S0))
    assert c.exact and c.global_


# ---------------------------------------------------------------- near the imaginary axis


def near_axis_case(spec):
    """A = diag(δ, −1), G = diag(g, g): tiny or zero δ."""
    delta, g = spec
    p = diag_layer([delta, -1.0], [g, g])
    S0 = np.eye(2)
    ref = diag_ref(p, S0)
    judge(p, S0, ref, undetermined_ok=ref.kind != "blows_up")


cases_of(AREA, "either", {
    f"near_axis_delta{d:g}_g{g:g}": (d, g)
    for d, g in [(1e-14, 1.0), (-1e-14, 1.0), (0.0, 1.0), (0.0, -1.0), (1e-10, -1.0),
                 (-1e-12, -1.0), (1e-300, -2.0), (1e-8, 1.0)]
}, near_axis_case)


@case(AREA, "either")
def near_axis_nonnormal_hyperbolic_exactly():
    """Eigenvalues ±1e-150 of a non-normal A (‖A‖ = 1): exactly hyperbolic, numerically on the
    axis; G = 2I ≻ 0. Any verdict must be the true one (convergence to a rank-1 Σ*)."""
    A = np.array([[1e-150, 1.0], [0.0, -1e-150]])
    c = judge(scalar_layer(A, 2 * np.eye(2)), np.eye(2), None, undetermined_ok=True,
              ode_horizon=50.0)
    assert c.regime in ("converges", "undetermined", "grows")


# ---------------------------------------------------------------- the threshold λ_max(W∞Σ0) = 1


def threshold_case(spec):
    """d = 1 or diagonal Hurwitz A with G ≺ 0: λ_max(W∞Σ0) = σ0|g|/(2|a|) against 1 exactly."""
    factor, d = spec
    a, g = -0.75, -1.5  # threshold σ0* = 2|a|/|g| = 1 exactly
    p = diag_layer([a] + [-2.0] * (d - 1), [g] + [-1.0] * (d - 1))
    S0 = np.diag([factor] + [0.25] * (d - 1))
    ref = diag_ref(p, S0)
    c = judge(p, S0, ref, undetermined_ok=abs(factor - 1) < 1e-8)
    if abs(factor - 1) >= 1e-8:
        assert c.exact and c.theorem == "nsd_threshold"


cases_of(AREA, "either", {
    f"threshold_{label}_d{d}": (f, d)
    for label, f, d in [("exactly1", 1.0, 1), ("exactly1", 1.0, 3),
                        ("next_up", np.nextafter(1, 2), 1), ("next_down", np.nextafter(1, 0), 2),
                        ("plus1e-9", 1 + 1e-9, 1),
                        ("minus1e-9", 1 - 1e-9, 3), ("plus1e-6", 1 + 1e-6, 2),
                        ("minus1e-6", 1 - 1e-6, 1), ("plus1e-3", 1.001, 3)]
}, threshold_case)


@case(AREA, "result")
def threshold_rotated_nondiagonal():
    """Non-normal Hurwitz A, G ≺ 0, Σ0 = s I on both sides of the exact threshold (bisected in
    floats): the two verdicts differ and each matches the DOP853 reference."""
    A = np.array([[-1.0, 3.0], [0.0, -2.0]])
    G = -np.array([[2.0, 0.5], [0.5, 1.0]])
    p = scalar_layer(A, G)
    lo, hi = 0.01, 100.0
    for _ in range(30):  # bracket the threshold with certificates, then verify both sides
        mid = np.sqrt(lo * hi)
        c = certify(p, mid * np.eye(2))
        if c.regime == "blows_up":
            hi = mid
        else:
            lo = mid
    below = judge(p, lo * np.eye(2), None, undetermined_ok=True, ode_horizon=40.0)
    above = judge(p, hi * np.eye(2), None, undetermined_ok=True, ode_horizon=40.0)
    assert below.regime == "collapses" or below.regime == "undetermined"
    assert above.regime in ("blows_up", "undetermined")


# ---------------------------------------------------------------- scales


def scale_case(spec):
    """Diagonal data scaled by s (A ↦ sA keeps the regime, T* ↦ T*/s; Σ0 ↦ sΣ0 and G ↦ G/s
    leave it unchanged)."""
    s, which, sign = spec
    a, g = np.array([1.0, -1.0, 0.5]), sign * np.array([1.0, 2.0, 0.5])
    S0 = np.diag([1.0, 2.0, 0.5])
    if which == "A":
        a = s * a
    elif which == "S0":
        S0, g = s * S0, g / s
    else:
        a, g = s * a, s * g
    p = diag_layer(a, g)
    judge(p, S0, diag_ref(p, S0), undetermined_ok=True)


cases_of(AREA, "either", {
    f"scale_{w}_{s:g}_{'opposite' if sg > 0 else 'same'}": (s, w, sg)
    for s, w, sg in [(1e150, "A", -1.0), (1e-150, "A", -1.0), (1e150, "A", 1.0),
                     (1e-100, "S0", -1.0), (1e100, "S0", 1.0), (1e300, "both", -1.0),
                     (1e-300, "both", 1.0), (1e200, "S0", -1.0)]
}, scale_case)


@case(AREA, "either")
def overflowing_quadratic_constant():
    """‖V‖‖B‖ overflows: a clean error or an honest certificate, never a leaked exception."""
    p = Params(np.eye(2), B=1e300 * np.eye(2), V=1e300 * np.diag([1.0, 2.0]))
    c = certify(p, np.eye(2))
    assert c.check() and not c.exact


@case(AREA, "either")
def overflowing_scalar_g():
    p = Params(-np.eye(2), B=1e308 * np.eye(2), V=4.0 * np.eye(2))
    judge(p, np.eye(2), None, undetermined_ok=True, ode_horizon=1.0)


# ---------------------------------------------------------------- general and near-scalar V


def general_v_case(spec):
    """V not (exactly) scalar: every certificate is numerical; verdict against DOP853."""
    dV, seed, kind = spec
    rng = np.random.default_rng(seed)
    d = 3
    if kind == "opposite":
        A, B, v = np.diag([1.0, 0.5, 2.0]), np.eye(d), -1.0
    elif kind == "same":
        A, B, v = np.diag([-1.0, -0.5, -2.0]), np.eye(d), 1.0
    else:
        A, B, v = np.diag([-1.0, -0.5, -2.0]), np.eye(d), -1.0
    V = v * np.eye(d) + dV * rng.standard_normal((d, d))
    p = Params(A, B=B, V=V)
    S0 = np.eye(d) * (3.0 if kind == "same" else 1.0)
    c = judge(p, S0, None, undetermined_ok=True, ode_horizon=60.0)
    assert not c.exact and not c.global_
    assert c.tolerance is None or "scalar_rtol" in c.tolerance or c.theorem == "numerical"


cases_of(AREA, "either", {
    f"general_V_{k}_{dv:g}": (dv, seed, k)
    for dv, seed, k in [(1e-15, 1, "opposite"), (1e-14, 2, "same"), (0.2, 3, "opposite"),
                        (0.2, 4, "same"), (0.1, 5, "hurwitz"), (1e-13, 6, "hurwitz")]
}, general_v_case)


@case(AREA, "either")
def near_scalar_v_numerical_premises():
    """V = I + 1e-15 E (scalar within 1e-13): the scalar theorems may be used, but only as a
    numerical certificate that records its tolerances."""
    V = np.eye(2)
    V[0, 1] = 1e-15
    p = Params(np.diag([1.0, 2.0]), B=-np.eye(2), V=V)
    c = judge(p, np.eye(2), None, ode_horizon=60.0)
    assert not c.exact and c.tolerance is not None


@case(AREA, "either")
def cov0_psd_only_within_tolerance():
    """Σ0 with an eigenvalue −O(eps) (accepted as PSD within tolerance, indefinite exactly): no
    exact certificate may rest on it."""
    x = 1 + 2.0 ** -52
    S0 = np.array([[1.0, x], [x, 1.0]])
    p = diag_layer([-1.0, -2.0], [-1.0, -1.0])
    c = judge(p, S0, None, undetermined_ok=True, ode_horizon=40.0)
    assert not c.exact


@case(AREA, "result")
def multi_head_exact_premises():
    """Two heads whose G = −Σ v_h(B_h + B_hᵀ) is ≻ 0 only as a sum; A anti-stable."""
    B1, B2 = np.diag([1.0, -0.25]), np.diag([0.5, 2.0])
    p = Params(np.diag([1.0, 3.0]), heads=[(-np.eye(2), B1), (-0.5 * np.eye(2), B2)])
    c = judge(p, np.eye(2), diag_ref(p, np.eye(2)))
    assert c.exact and c.theorem == "psd_gramian_pd"


@case(AREA, "result")
def unseen_mode_exactly():
    """G e₁ = 0 exactly, A e₁ = e₁: the anti-stable mode is unseen, Σ grows (exact)."""
    A = np.array([[1.0, 0.5], [0.0, -1.0]])
    p = Params(A, B=np.diag([0.0, 1.0]), V=-np.eye(2))
    c = judge(p, np.eye(2), None, ode_horizon=12.0)
    assert c.exact and c.regime == "grows"


@case(AREA, "either")
def unseen_mode_up_to_rounding():
    """The same, rotated in floats: G e ≈ 0 only up to rounding; no exact verdict may rest on
    the rounding (truly: seen with a tiny weight, or indefinite)."""
    Q = rotation(2, 11)
    A = Q @ np.array([[1.0, 0.5], [0.0, -1.0]]) @ Q.T
    G = Q @ np.diag([0.0, 2.0]) @ Q.T
    p = scalar_layer(A, 0.5 * (G + G.T))
    c = certify(p, np.eye(2))
    assert c.check()
    if c.exact:
        check_exact_premises(c)
        assert c.regime != "grows" or psd(exact_G(p))


# ---------------------------------------------------------------- "bounded" only when proved


def far_top(A, S0, t, dps=40) -> mp.mpf:
    """λ_max(e^{At}Σ0e^{Aᵀt}) by mpmath's expm (an upper bound of Σ(t) for G ⪰ 0, Σ(t) itself
    for G = 0)."""
    with mp.workdps(dps):
        E = mp.expm(mp.matrix(np.asarray(A).tolist()) * t)
        X = E * mp.matrix(np.asarray(S0).tolist()) * E.T
        return max(mp.eigsy((X + X.T) / 2)[0])


def _marginal_layer(d, re, jordan, seed, kind):
    """A = Q J Qᵀ in floats, J: a rotation with real part re ("rot"), a nilpotent coupling
    `jordan` at 0 ("nil"), or a rotation Jordan block [[R, jordan·I], [0, R]] with Re = re
    ("rotjordan"), then stable modes −0.5, −0.75, …"""
    k = 4 if kind == "rotjordan" else 2
    J = np.diag([0.0] * k + [-0.5 - 0.25 * i for i in range(d - k)])
    R = np.array([[re, -1.0], [1.0, re]])
    if kind == "rot":
        J[:2, :2] = R
    elif kind == "nil":
        J[:2, :2] = [[0.0, jordan], [0.0, 0.0]]
    else:
        J[:4, :4] = np.block([[R, jordan * np.eye(2)], [np.zeros((2, 2)), R]])
    Q = rotation(d, seed)
    return Q @ J @ Q.T


def bounded_case(spec):
    """d ≥ 7 (beyond the exact premises): A with an eigenvalue of real part +1e-9 (Σ grows like
    e^{2e-9 t}) or a Jordan block on iℝ with a coupling ≤ 1e-9 (Σ grows like t²), numerically
    Lyapunov stable; no attention, or a scalar head with B skew (G = 0). A "bounded" answer must
    hold at t = 1e12, 1e16 and 1e20 against mpmath's expm, where Σ(t) has left every bound near
    λ_max(Σ0) (the old numerical witness said "bounded")."""
    d, re, jordan, seed, kind, attention = spec
    A = _marginal_layer(d, re, jordan, seed, kind)
    p = Params(A) if not attention else Params(A, B=rotation(d, 3) - rotation(d, 3).T,
                                                 V=2.0 * np.eye(d))
    S0 = np.eye(d)
    c = certify(p, S0)
    assert c.check(), c.reason
    tops = [far_top(A, S0, t) for t in (1e12, 1e16, 1e20)]
    assert tops[-1] > 1e6, "the reference does not grow"
    if c.regime == "bounded":
        worst = max(tops)
        assert worst <= c.bound, f"bounded by {c.bound:.6g} but λ_max(Σ(t)) ≥ {float(worst):.3g}"


cases_of(AREA, "either", {
    f"bounded_d{d}_{kind}_{label}{'_skew_head' if att else ''}": (d, re, jor, seed, kind, att)
    for label, d, re, jor, seed, kind, att in [
        ("re_plus_1e-9", 7, 1e-9, 0.0, 21, "rot", False),
        ("re_plus_1e-10", 8, 1e-10, 0.0, 22, "rot", True),
        ("coupling_1e-12", 7, 0.0, 1e-12, 23, "nil", True),
        ("coupling_1e-9", 8, 0.0, 1e-9, 24, "rotjordan", False),
        ("re_plus_1e-9_coupling_1e-9", 9, 1e-9, 1e-9, 25, "rotjordan", True),
    ]
}, bounded_case, timeout=120)


@case(AREA, "result")
def bounded_skew_plus_1e_9_is_not_bounded_d10():
    """A skew + 1e-9 I at d = 10 (only S = I is decided beyond d = 6, and A is not skew):
    no "bounded"; A skew itself is bounded by λ_max(Σ0) (rounded up), at t = 1e12."""
    S0 = np.diag(np.arange(1.0, 11.0))
    A = np.zeros((10, 10))
    for k in range(5):
        A[2 * k, 2 * k + 1], A[2 * k + 1, 2 * k] = -(k + 1.0), k + 1.0
    c = certify(Params(A + 1e-9 * np.eye(10)), S0)
    assert c.regime != "bounded" and c.check(), c.reason
    c = certify(Params(A), S0)
    assert c.regime == "bounded" and c.check() and c.bound >= 10.0
    assert far_top(A, S0, 1e12, dps=30) <= c.bound


@case(AREA, "result")
def marginal_A_with_stabilising_signs_general_v():
    """A with spectral abscissa 0 up to rounding (λ = −2e-16), V ⪰ 0, B ⪯ 0 general (d = 3, from
    a random search): the linearisation at the equilibrium the flow approaches has a pair
    λ_i + λ_j within SLICOT's separation bound of 0, and so does H ↦ AH + HAᵀ at Σ* = 0. Before,
    certify raised SolverError from the refused local Lyapunov solve, and scipy's perturbed
    solve of AᵀP + PA = −I warned; now no P is taken from either, no warning escapes, and the
    answer is "undetermined" (numerical, check() True) or a regime the reference confirms."""
    import warnings

    A = [[-1.623956214467586, -1.5093976153060016, 0.5772315732898916],
         [0.7813909531767034, 0.0033347202372445706, -0.21479624769398195],
         [-0.03644416070944652, -0.14577348068126442, 0.022697374728093078]]
    V = [[0.37955222656940013, 0.1317978820236522, -0.3652051912591765],
         [0.13179788202365214, 0.9507144697927429, 0.43993182777336926],
         [-0.3652051912591765, 0.43993182777336926, 0.8164823643985811]]
    B = [[-1.5901403587624803, 0.5418345866637954, 0.1500600211402059],
         [0.5418345866637954, -0.43705794946787235, 0.2706686031426255],
         [0.15006002114020595, 0.2706686031426255, -0.7103149553320423]]
    S0 = [[2.929973464801849, -0.14601915318990438, 0.24290968724343695],
          [-0.14601915318990438, 0.482260042101134, 0.08132439664638895],
          [0.24290968724343695, 0.08132439664638895, 1.410764278928195]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        judge(Params(A, B=B, V=V), S0, None, undetermined_ok=True, ode_horizon=200.0)


# ---------------------------------------------------------------- forged certificates


def _later_root_case(spec):
    """Scalar V, A = ω·rotation, G = Q diag(−g, g) Qᵀ, Σ0 = s I: λ_min(I + sW(t)) =
    1 − (sg/ω)|sin ωt| (G's rotation Q does not change W's spectrum), so T* = asin(ω/(sg))/ω
    and the roots repeat every π/ω. certify's T* agrees; the next roots, with their own blow-up
    directions, are rejected by check()."""
    from dataclasses import replace

    from riccati_tf.stability.certificates.verification import _direction_ok

    w, g, s, seed = spec
    Q = rotation(2, seed)
    G = Q @ np.diag([-g, g]) @ Q.T
    p = scalar_layer(w * np.array([[0.0, -1.0], [1.0, 0.0]]), 0.5 * (G + G.T))
    c = certify(p, s * np.eye(2))
    assert c.check(), c.reason
    first = float(np.arcsin(w / (s * g)) / w)
    assert c.regime == "blows_up" and abs(c.blowup_time - first) <= 1e-7 * first, c.reason
    for k in (1, 2):
        for T in (k * np.pi / w + first, k * np.pi / w + np.pi / w - first):
            forged = None
            for u in (np.array([1.0, 0.0]), np.array([0.0, 1.0]),
                      np.array([1.0, 1.0]) / np.sqrt(2), np.array([1.0, -1.0]) / np.sqrt(2)):
                if _direction_ok(p, c.cov0, T, u):
                    forged = replace(c, blowup_time=T, blowup_direction=u)
            forged = forged or replace(c, blowup_time=T)
            assert not forged.check(), f"a later root T = {T:.6g} passes check()"


cases_of(AREA, "result", {
    f"forged_later_root_w{w:g}_g{g:g}_s{s:g}": (w, g, s, seed)
    for w, g, s, seed in [(1.0, 1.0, 4.0, 0), (2.0, 0.5, 16.0, 1), (0.5, 3.0, 1.0, 2),
                          (1.0, 1.0, 1.5, 3)]
}, _later_root_case)


def _forged_start_case(spec):
    """A genuine certificate with Σ0 replaced by one whose upper triangle differs from its lower
    one (or holds NaN, or −Σ0): check() rejects it; the genuine one passes."""
    from dataclasses import replace

    label, p, S0 = spec
    c = certify(p, S0)
    assert c.check(), c.reason
    d = p.d
    upper = c.cov0.copy()
    upper[0, d - 1] += 0.5 * float(np.max(np.abs(c.cov0)))
    for bad in (upper, upper.T.copy(), np.full((d, d), np.nan), -c.cov0):
        assert not replace(c, cov0=bad).check(), f"{label}: Σ0 forged as {bad.tolist()} passes"


cases_of(AREA, "result", {
    f"forged_start_{label}": (label, p, S0) for label, p, S0 in [
        ("converges", Params(np.diag([1.0, 2.0]), B=0.5 * np.eye(2), V=-np.eye(2)), np.eye(2)),
        ("blows_up", Params(np.diag([1.0, -0.5]), B=np.eye(2), V=np.eye(2)),
         np.array([[1.0, 0.2], [0.2, 3.0]])),
        ("bounded", Params(np.array([[0.0, 1.0], [-3.0, 0.0]])), np.array([[1.0, 0.3],
                                                                           [0.3, 2.0]])),
        ("closed_form_root", Params(0.1 * np.eye(3), B=np.diag([-0.5, 0.5, 0.25]), V=np.eye(3)),
         np.array([[1.0, 0.3, 0.0], [0.3, 1.0, 0.1], [0.0, 0.1, 2.0]])),
    ]
}, _forged_start_case)


def _stale_equilibrium_case(spec):
    """A converging certificate whose equilibrium no longer matches the layer: b changed (m*
    stale), m* shifted, the rank, the stable flag or the spectral abscissa changed."""
    from dataclasses import replace

    label, p = spec
    c = certify(p, np.eye(p.d))
    assert c.check() and c.regime == "converges" and c.equilibrium.mean is not None, c.reason
    eq = c.equilibrium
    forged = {
        "b + 1": replace(c, params=Params(p.A, heads=p.heads, b=p.b + 1.0)),
        "m* + 1e-3": replace(c, equilibrium=replace(eq, mean=eq.mean + 1e-3)),
        "m* None": replace(c, equilibrium=replace(eq, mean=None)),
        "rank − 1": replace(c, equilibrium=replace(eq, rank=eq.rank - 1)),
        "unstable": replace(c, equilibrium=replace(eq, stable=False)),
        "abscissa + 0.5": replace(c, equilibrium=replace(
            eq, spectral_abscissa=eq.spectral_abscissa + 0.5)),
        "abscissa positive, unstable": replace(c, equilibrium=replace(
            eq, spectral_abscissa=-eq.spectral_abscissa, stable=False)),
    }
    for name, f in forged.items():
        assert not f.check(), f"{label}: {name} passes check()"


cases_of(AREA, "result", {
    f"stale_equilibrium_{label}": (label, p) for label, p in [
        ("scalar", Params(np.diag([1.0, 2.0]), B=0.5 * np.eye(2), V=-np.eye(2), b=[1.0, 2.0])),
        ("scalar_d3_rotated", scalar_layer(rotation(3, 5) @ np.diag([1.0, 0.5, 2.0])
                                           @ rotation(3, 5).T, np.eye(3), v=-1.0)),
        ("general_v", Params(np.diag([1.0, 0.5, 2.0]), B=np.eye(3),
                             V=-np.eye(3) + 0.2 * rotation(3, 6), b=[0.5, -1.0, 2.0])),
    ]
}, _stale_equilibrium_case)


def _undetermined_evidence_case(spec):
    """An "undetermined" certificate with its evidence forged: Σ0 of NaN, another Σ0, the
    horizon moved, Σ at the horizon changed, the tolerances removed."""
    from dataclasses import replace

    label, p, S0 = spec
    c = certify(p, S0)
    assert c.regime == "undetermined" and c.check(), c.reason
    forged = {"Σ0 NaN": replace(c, cov0=np.full_like(c.cov0, np.nan)),
              "Σ0 × 2": replace(c, cov0=2 * c.cov0)}
    if c.horizon is not None:
        forged |= {"horizon / 2": replace(c, horizon=c.horizon / 2),
                   "horizon × 1e-3": replace(c, horizon=c.horizon * 1e-3),
                   "Σ(horizon) + I": replace(c, final_cov=c.final_cov + np.eye(p.d)),
                   "no tolerance": replace(c, tolerance=None)}
    if c.threshold is not None:
        forged["threshold × 2"] = replace(c, threshold=2 * c.threshold)
    for name, f in forged.items():
        assert not f.check(), f"{label}: {name} passes check()"


cases_of(AREA, "result", {
    f"undetermined_evidence_{label}": (label, p, S0) for label, p, S0 in [
        ("threshold", Params([[-0.75]], B=[[0.75]], V=[[1.0]]), np.eye(1)),
        ("rotation_indefinite_G", scalar_layer(np.array([[0.0, -2.0], [2.0, 0.0]]),
                                               np.diag([-1.0, 1.0])), 0.5 * np.eye(2)),
    ]
}, _undetermined_evidence_case, timeout=180)
