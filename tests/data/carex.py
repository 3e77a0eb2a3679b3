"""CARE benchmark examples with closed-form stabilizing solutions: fixed reference data.

    0 = Q + Aᵀ X + X A − X G X

Source: P. Benner, A. J. Laub, V. Mehrmann, "A collection of benchmark examples for the numerical
solution of algebraic Riccati equations I: continuous-time case", Tech. Report SPC 95_23,
TU Chemnitz-Zwickau, 1995, and its MATLAB generator `carex.m`; the collection was revised as
J. Abels, P. Benner, "CAREX — a collection of benchmark examples for continuous-time algebraic
Riccati equations (version 2.0)", SLICOT Working Note 1999-14. Keys are the example indices of
`carex.m`; only the examples whose exact solution X is given in closed form are kept, with their
formulas transcribed (no computed values). Each function returns (A, G, Q, X).
"""

import numpy as np


def ex1():
    """Fixed 2×2 example (Laub 1979, Ex. 1): X = [[2, 1], [1, 2]]."""
    A = np.array([[0.0, 1.0], [0.0, 0.0]])
    G = np.array([[0.0, 0.0], [0.0, 1.0]])
    Q = np.array([[1.0, 0.0], [0.0, 2.0]])
    X = np.array([[2.0, 1.0], [1.0, 2.0]])
    return A, G, Q, X


def ex2():
    """Fixed 2×2 example (Laub 1979, Ex. 2): X = (1 + √2) [[9, 6], [6, 4]]."""
    A = np.array([[4.0, 3.0], [-4.5, -3.5]])
    G = np.array([[1.0, -1.0], [-1.0, 1.0]])
    Q = np.array([[9.0, 6.0], [6.0, 4.0]])
    return A, G, Q, (1 + np.sqrt(2)) * Q


def ex7(eps=1e-6):
    """2×2 with parameter ε (default 1e-6): G = diag(ε², 0), Q = ones; s = √(1 + ε²), s₂ = 2 + s,
    X = [[(1 + s)/ε², 1/s₂], [1/s₂, (1 − ε²/s₂²)/4]]."""
    A = np.array([[1.0, 0.0], [0.0, -2.0]])
    G = np.array([[eps ** 2, 0.0], [0.0, 0.0]])
    Q = np.ones((2, 2))
    s = np.sqrt(1 + eps ** 2)
    s2 = 2 + s
    X = np.array([[(1 + s) / eps ** 2, 1 / s2], [1 / s2, (1 - eps ** 2 / s2 ** 2) / 4]])
    return A, G, Q, X


def ex9(eps=1e6):
    """2×2 with parameter ε (default 1e6): A = [[0, ε], [0, 0]]; s = √(1 + 2ε),
    X = [[s/ε, 1], [1, s]]."""
    A = np.array([[0.0, eps], [0.0, 0.0]])
    G = np.array([[0.0, 0.0], [0.0, 1.0]])
    Q = np.eye(2)
    s = np.sqrt(1 + 2 * eps)
    return A, G, Q, np.array([[s / eps, 1.0], [1.0, s]])


def ex10(eps=1e-7):
    """2×2 with parameter ε (default 1e-7): A = [[ε + 1, 1], [1, ε + 1]], G = I, Q = ε² I;
    x₁ = (2(ε + 1) + √(2(ε + 1)² + 2) + √2 ε)/2, x₂ = x₁/(x₁ − (ε + 1)),
    X = [[x₁, x₂], [x₂, x₁]]."""
    d1 = eps + 1
    A = np.array([[d1, 1.0], [1.0, d1]])
    G = np.eye(2)
    Q = eps ** 2 * np.eye(2)
    x1 = (2 * d1 + np.sqrt(2 * d1 ** 2 + 2) + np.sqrt(2) * eps) / 2
    x2 = x1 / (x1 - d1)
    return A, G, Q, np.array([[x1, x2], [x2, x1]])


def ex11(eps=0.0):
    """2×2 with parameter ε (default 0), indefinite Q: X = [[2, 1], [1, 1]] for every ε."""
    A = np.array([[3 - eps, 1.0], [4.0, 2 - eps]])
    G = np.ones((2, 2))
    Q = np.array([[4 * eps - 11, 2 * eps - 5], [2 * eps - 5, 2 * eps - 2]])
    return A, G, Q, np.array([[2.0, 1.0], [1.0, 1.0]])


def ex12(eps=1e6):
    """3×3 with parameter ε (default 1e6): C = I − (2/3)𝟙𝟙ᵀ, A = ε C diag(1, 2, 3) C, G = I/ε,
    Q = C diag(1/ε, 1, ε) C, X = C diag(ε² + √(1 + ε⁴), 2ε² + √(ε + 4ε⁴), 3ε² + ε√(1 + 9ε²)) C."""
    C = np.eye(3) - (2 / 3) * np.ones((3, 3))
    A = eps * (C @ np.diag([1.0, 2.0, 3.0]) @ C)
    G = np.eye(3) / eps
    Q = C @ np.diag([1 / eps, 1.0, eps]) @ C
    Q = (Q + Q.T) / 2
    dd = eps ** 2
    x = [dd + np.sqrt(1 + dd ** 2), 2 * dd + np.sqrt(eps + 4 * dd ** 2),
         3 * dd + eps * np.sqrt(1 + 9 * dd)]
    return A, G, Q, C @ np.diag(x) @ C


def ex16(n=64):
    """Scalable (default n = 64): A the periodic second-difference matrix (−2 on the diagonal,
    1 beside it and in the corners), G = Q = I; X is circulant with eigenvalues
    −2 + 2 cos(2πk/n) + √(5 − 8 cos(2πk/n) + 4 cos²(2πk/n)), X = toeplitz(fft(su)/n)."""
    A = np.diag(np.ones(n - 1), -1) + np.diag(-2 * np.ones(n)) + np.diag(np.ones(n - 1), 1)
    A[n - 1, 0] = 1.0
    A[0, n - 1] = 1.0
    c = np.cos(2 * np.pi * np.arange(n) / n)
    su = -2 + 2 * c + np.sqrt(5 - 8 * c + 4 * c ** 2)
    col = np.real(np.fft.fft(su)) / n
    idx = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    return A, np.eye(n), np.eye(n), col[idx]


#: (name, generator, keyword arguments): the defaults of carex.m and gentler parameter values
EXAMPLES = [
    ("ex1", ex1, {}),
    ("ex2", ex2, {}),
    ("ex7", ex7, {}),
    ("ex7", ex7, {"eps": 1.0}),
    ("ex9", ex9, {}),
    ("ex9", ex9, {"eps": 1.0}),
    ("ex10", ex10, {}),
    ("ex10", ex10, {"eps": 1.0}),
    ("ex11", ex11, {}),
    ("ex11", ex11, {"eps": 2.0}),
    ("ex12", ex12, {}),
    ("ex12", ex12, {"eps": 1.0}),
    ("ex16", ex16, {}),
    ("ex16", ex16, {"n": 8}),
]
