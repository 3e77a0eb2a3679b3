"""Built-in layer parameters for the regimes of SPEC §5 (scalar value matrices, d = 2).

With V = vI and G = −v(B + Bᵀ):
- "converges": G ≻ 0 and A anti-stable — Σ(t) → Σ* = P*⁻¹, AᵀP* + P*A = G;
- "collapses": G ≻ 0 and A Hurwitz — Σ(t) → 0 (clustering);
- "blows_up": G ≺ 0 (v and B of the same definiteness) — finite-time blow-up.
"""

from __future__ import annotations

import numpy as np

from ..state.params import Gaussian, Params

__all__ = ["regime_examples"]
_ROT = np.array([[0.0, -1.0], [1.0, 0.0]])


def regime_examples() -> dict[str, tuple[Params, Gaussian, float]]:
    """{name: (params, initial Gaussian, horizon)} for the three scalar-V regimes.

    With V = vI the covariance obeys Σ̇ = AΣ + ΣAᵀ − ΣGΣ, G = −v(B + Bᵀ), on R² here with
    B = [[1, 0.2], [0.2, 0.6]], rotation-perturbed A and Σ0 = [[1, 0.3], [0.3, 0.5]],
    m0 = (1, −0.5):

    - "converges": A = 0.5I + 0.3R (anti-stable), v = −1 (G ≻ 0), b = (0.2, 0):
      Σ(t) → Σ* = P*⁻¹, AᵀP* + P*A = G;
    - "collapses": A = −0.4I + 0.5R (Hurwitz), v = −1 (G ≻ 0), b = (0.1, 0.1): Σ(t) → 0;
    - "blows_up": A = 0.2I + 0.3R, v = 0.3 (G ≺ 0): finite-time blow-up at T* ≈ 1.1015;

    R the rotation by π/2; the horizon is 8 for each.

    Returns
    -------
    dict of str to tuple (Params, Gaussian, float)
        {"converges", "collapses", "blows_up"} → (layer, initial Gaussian, horizon).

    Raises
    ------
    InvalidInputError
        Not for these fixed values: it is what the Params and Gaussian constructors raise for
        invalid input.

    See Also
    --------
    riccati_tf.certify : the certificate of each regime.
    riccati_tf.flow : the trajectory of each.
    riccati_tf.app.plotting.plot_flow : draws one.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §5 "Time-invariant parameters: equilibria, stability,
       blow-up".

    Examples
    --------
    >>> from riccati_tf import certify
    >>> from riccati_tf.app.examples import regime_examples
    >>> for name, (params, g0, horizon) in regime_examples().items():
    ...     print(name, certify(params, g0.cov, g0.mean).regime)
    converges converges
    collapses collapses
    blows_up blows_up
    >>> params, g0, _ = regime_examples()["blows_up"]
    >>> print(round(certify(params, g0.cov).blowup_time, 6))
    1.101518
    """
    g0 = Gaussian(np.array([1.0, -0.5]), np.array([[1.0, 0.3], [0.3, 0.5]]))
    sym = np.array([[1.0, 0.2], [0.2, 0.6]])
    return {
        "converges": (Params(A=0.5 * np.eye(2) + 0.3 * _ROT, B=sym, V=-1.0 * np.eye(2),
                             b=np.array([0.2, 0.0])), g0, 8.0),
        "collapses": (Params(A=-0.4 * np.eye(2) + 0.5 * _ROT, B=sym, V=-1.0 * np.eye(2),
                             b=np.array([0.1, 0.1])), g0, 8.0),
        "blows_up": (Params(A=0.2 * np.eye(2) + 0.3 * _ROT, B=sym, V=0.3 * np.eye(2)), g0, 8.0),
    }
