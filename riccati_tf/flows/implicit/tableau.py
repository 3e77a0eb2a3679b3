"""The Rosenbrock method Rodas4 (Hairer and Wanner): 6 stages, order 4, an embedded estimate of
order 3, L-stable and stiffly accurate.

In the transformed variables u_i of the method, with W = I/(γh) − J (J = ∂f/∂y at y_n),

    W u_i = f(y_n + Σ_{j<i} a_ij u_j) + Σ_{j<i} (c_ij/h) u_j,      i = 1, …, 6,
    y_{n+1} = y_n + Σ_{j≤5} a_6j u_j + u_6,      error estimate u_6

(autonomous systems: no ∂f/∂t term). The last stage's argument is the embedded solution, so
u_6 is the difference of the solutions of orders 4 and 3.

References: E. Hairer and G. Wanner, "Solving Ordinary Differential Equations II", 2nd ed.,
Springer 1996, §IV.7 (the coefficients of RODAS4 in rodas.f).
"""

import numpy as np

__all__: list[str] = []

GAMMA = 0.25
#: a_ij (row i, columns j < i), the last row that of the embedded solution
A = np.array([
    [0, 0, 0, 0, 0],
    [1.544, 0, 0, 0, 0],
    [0.9466785280815826, 0.2557011698983284, 0, 0, 0],
    [3.314825187068521, 2.896124015972201, 0.9986419139977817, 0, 0],
    [1.221224509226641, 6.019134481288629, 12.53708332932087, -0.687886036105895, 0],
    [1.221224509226641, 6.019134481288629, 12.53708332932087, -0.687886036105895, 1.0],
])
#: c_ij (row i, columns j < i)
C = np.array([
    [0, 0, 0, 0, 0],
    [-5.6688, 0, 0, 0, 0],
    [-2.430093356833875, -0.2063599157091915, 0, 0, 0],
    [-0.1073529058151375, -9.594562251023355, -20.47028614809616, 0, 0],
    [7.496443313967647, -10.24680431464352, -33.99990352819905, 11.7089089320616, 0],
    [8.083246795921522, -7.981132988064893, -31.52159432874371, 16.31930543123136,
     -6.058818238834054],
])
STAGES = 6
#: the order of the embedded estimate plus one: the exponent of the step-size rule is 1/4
ERROR_ORDER = 4
