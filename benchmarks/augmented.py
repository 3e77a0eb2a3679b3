"""The growing stabilising-sign flow with the heads' blocks as unknowns of their own.

Run: python -m benchmarks.augmented [--d D] [--t-final T] [--rtol R ...]

On the slow manifold of the stabilising-sign family (`riccati_tf.empirical.families`, A
anti-stable) the heads' blocks Y_h = Ṽ_h Σ K_hᵀ (V_h = O_h Ṽ_h, B_h = K_hᵀ Q_h) stay of order
one while Σ grows; a float64 Σ loses them by t ≈ 50 (SPEC §11). This benchmark integrates the
augmented system

    Σ̇ = M Σ + Σ Mᵀ,   Ẏ_h = Ṽ_h (M Σ + Σ Mᵀ) K_hᵀ,   M = A + Σ_h O_h Y_h Q_h,

which has the same solution (Y_h − Ṽ_h Σ K_hᵀ is constant along it) but reads the blocks from
Y_h, never from Σ. scipy's Radau, with the exact Jacobian (dense Kronecker form, d ≤ 48), runs
it at each rtol given; printed at each time: tr Σ, max |Y_h|, the extreme eigenvalues of Σ
(whose ratio meets the unit roundoff when λ_min(Σ) goes negative), the relative difference of
tr Σ between the two tolerances, and how the run ended, with its CPU time. Not a method of the
package: a measurement of how far the representation (Σ, Y_h) carries the flow in float64.

`--form factored` integrates (L, Y_h) instead, Σ = L Lᵀ with L̇ = M L (L0 the Cholesky factor of
Σ0): Σ is positive semidefinite by construction, and the run shows whether that is enough.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.integrate import solve_ivp

from riccati_tf.empirical.families import family_cases

from ._timing import pin_one_thread

TIMES = (10.0, 20.0, 40.0, 60.0, 80.0, 100.0, 300.0, 1000.0)


class Augmented:
    """The augmented right-hand side and its exact Jacobian for a layer of `Head` factors."""

    def __init__(self, params, cov0: np.ndarray) -> None:
        heads = params.factors
        self.d, self.A = params.d, np.asarray(params.A, dtype=float)
        self.Vs, self.Ks = np.vstack([h.V for h in heads]), np.vstack([h.K for h in heads])
        self.Os, self.Qs = np.hstack([h.O for h in heads]), np.vstack([h.Q for h in heads])
        self.shapes = [(h.V.shape[0], h.K.shape[0]) for h in heads]
        self.rows = np.cumsum([0] + [a for a, _ in self.shapes])
        self.cols = np.cumsum([0] + [b for _, b in self.shapes])
        width = self.cols[-1]
        # blocks(Ṽ X Kᵀ) = select · vec_r(X): the heads' diagonal blocks of the stacked product
        select = [(self.rows[i] + p) * width + self.cols[i] + q
                  for i, (a, b) in enumerate(self.shapes) for p in range(a) for q in range(b)]
        self.select = np.kron(self.Vs, self.Ks)[select]
        self.y0 = np.concatenate([cov0.ravel(), self.blocks(self.Vs @ cov0 @ self.Ks.T)])

    def blocks(self, Z: np.ndarray) -> np.ndarray:
        """The heads' diagonal blocks of Z (Σ_h s_h × Σ_h r_h), flattened."""
        return np.concatenate([Z[self.rows[i]:self.rows[i + 1], self.cols[i]:self.cols[i + 1]]
                               .ravel() for i in range(len(self.shapes))])

    def unpack(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(Σ, the block-diagonal matrix of the Y_h)."""
        d = self.d
        Y = np.zeros((self.rows[-1], self.cols[-1]))
        at = d * d
        for i, (a, b) in enumerate(self.shapes):
            Y[self.rows[i]:self.rows[i + 1], self.cols[i]:self.cols[i + 1]] = \
                y[at:at + a * b].reshape(a, b)
            at += a * b
        return y[:d * d].reshape(d, d), Y

    def head(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(O_h, Q_h) of head i, from the stacked factors."""
        return (self.Os[:, self.rows[i]:self.rows[i + 1]],
                self.Qs[self.cols[i]:self.cols[i + 1]])

    def covariance(self, y: np.ndarray) -> np.ndarray:
        """Σ of the state y."""
        return self.unpack(y)[0]

    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        S, Y = self.unpack(y)
        M = self.A + self.Os @ Y @ self.Qs
        dS = M @ S + S @ M.T
        return np.concatenate([dS.ravel(), self.blocks(self.Vs @ dS @ self.Ks.T)])

    def jac(self, t: float, y: np.ndarray) -> np.ndarray:
        S, Y = self.unpack(y)
        eye = np.eye(self.d)
        M = self.A + self.Os @ Y @ self.Qs
        columns = [np.kron(M, eye) + np.kron(eye, M)]
        for i, (a, b) in enumerate(self.shapes):
            O, Q = self.head(i)
            flip = np.zeros((a * b, a * b))  # vec_r(δYᵀ) = flip · vec_r(δY)
            flip[(np.arange(b)[:, None] * a + np.arange(a)).ravel(),
                 (np.arange(a)[None, :] * b + np.arange(b)[:, None]).ravel()] = 1.0
            columns.append(np.kron(O, (Q @ S).T) + np.kron(S @ Q.T, O) @ flip)
        top = np.hstack(columns)
        return np.vstack([top, self.select @ top])


class Factored(Augmented):
    """The state (L, Y_h), Σ = L Lᵀ: L̇ = M L, Ẏ_h = Ṽ_h (M Σ + Σ Mᵀ) K_hᵀ, M as in Augmented;
    `unpack` gives (L, Y)."""

    def __init__(self, params, cov0: np.ndarray) -> None:
        super().__init__(params, cov0)
        d = self.d
        self.y0 = np.concatenate([np.linalg.cholesky(cov0).ravel(), self.y0[d * d:]])
        self.transpose = np.zeros((d * d, d * d))  # vec_r(Xᵀ) = transpose · vec_r(X)
        i, j = np.meshgrid(np.arange(d), np.arange(d), indexing="ij")
        self.transpose[(j * d + i).ravel(), (i * d + j).ravel()] = 1.0

    def covariance(self, y: np.ndarray) -> np.ndarray:
        L = self.unpack(y)[0]
        return L @ L.T

    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        L, Y = self.unpack(y)
        ML = (self.A + self.Os @ Y @ self.Qs) @ L
        dS = ML @ L.T
        return np.concatenate([ML.ravel(), self.blocks(self.Vs @ (dS + dS.T) @ self.Ks.T)])

    def jac(self, t: float, y: np.ndarray) -> np.ndarray:
        L, Y = self.unpack(y)
        # dΣ/dL = kron(I, L) + kron(L, I)·transpose; the Σ-columns of Augmented's Jacobian at
        # Σ = L Lᵀ map dΣ to d(MΣ + ΣMᵀ) and the Y-columns are Augmented's
        eye, n = np.eye(self.d), self.d * self.d
        dS = super().jac(t, np.concatenate([self.covariance(y).ravel(), y[n:]]))[:n]
        dS = np.hstack([dS[:, :n] @ (np.kron(eye, L) + np.kron(L, eye) @ self.transpose),
                        dS[:, n:]])
        M = self.A + self.Os @ Y @ self.Qs
        top = [np.kron(M, eye)]
        for i in range(len(self.shapes)):
            O, Q = self.head(i)
            top.append(np.kron(O, (Q @ L).T))
        return np.vstack([np.hstack(top), self.select @ dS])


FORMS = {"augmented": Augmented, "factored": Factored}


def run(d: int, t_final: float, rtols: tuple[float, ...], form: str = "augmented") -> None:
    case = family_cases((d,), 1, family="opposite")[0]
    system = FORMS[form](case.params, np.asarray(case.initial.cov, dtype=float))
    times = [t for t in TIMES if t <= t_final]
    traces = {}
    for rtol in rtols:
        start = time.process_time()
        sol = solve_ivp(system.rhs, (0.0, t_final), system.y0, method="Radau", jac=system.jac,
                        rtol=rtol, atol=rtol * 1e-3, t_eval=times)
        cpu = time.process_time() - start
        reached = sol.t[-1] if sol.t.size else 0.0
        print(f"{case.name}, rtol {rtol:g}: {sol.message} (last output time {reached:g}, "
              f"{sol.nfev} right-hand sides, {sol.njev} Jacobians, {cpu:.1f} s)", flush=True)
        traces[rtol] = {}
        for t, y in zip(sol.t, sol.y.T, strict=True):
            S, Y = system.covariance(y), system.unpack(y)[1]
            lam = np.linalg.eigvalsh((S + S.T) / 2)
            traces[rtol][t] = np.trace(S)
            print(f"  t = {t:6g}  tr Σ = {np.trace(S):.10e}  max |Y_h| = {np.abs(Y).max():.4f}  "
                  f"λ(Σ) in [{lam[0]:.3e}, {lam[-1]:.3e}]", flush=True)
    if len(rtols) > 1:
        a, b = traces[rtols[0]], traces[rtols[-1]]
        for t in sorted(set(a) & set(b)):
            print(f"  t = {t:6g}  tr Σ: rtol {rtols[0]:g} against {rtols[-1]:g}, relative "
                  f"difference {abs(a[t] - b[t]) / abs(b[t]):.2e}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=24, help="the dimension (≤ 48)")
    parser.add_argument("--t-final", type=float, default=100.0)
    parser.add_argument("--rtol", type=float, nargs="+", default=[1e-7, 1e-9])
    parser.add_argument("--form", choices=sorted(FORMS), default="augmented",
                        help="the state: (Σ, Y_h) or the factor (L, Y_h), Σ = L Lᵀ")
    args = parser.parse_args(argv)
    if args.d > 48:
        parser.error("the dense Jacobian is for d ≤ 48")
    _, line = pin_one_thread()
    print(line)
    run(args.d, args.t_final, tuple(args.rtol), args.form)


if __name__ == "__main__":
    main()
