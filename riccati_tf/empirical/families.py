"""Random multi-head layers of real shape in the paper's sign regimes, as seeded families.

The stabilising-sign (opposite-definiteness) family: H heads of rank r = max(1, d // H), each
built from unrelated random factors V, O, K, Q ∈ R^{r×d} with i.i.d. N(0, 1/d) entries,

    V_h = VᵀV + ε OᵀV   (⪰-dominant),     B_h = −(KᵀK + ε QᵀK) / √r   (⪯-dominant),

ε = 0.1, A = a I + (noise / √d) N with N i.i.d. N(0, 1) (a = 0.3: the paper's feed-forward
growth), b = 0, Σ0 = I/2. The attention term V_h Σ B_h Σ slows the growth that A drives but
does not stop it: measured with Radau and the exact Jacobian (d = 24 and 48, 12 cases) tr Σ
grows like e^{γt}, γ = 0.40–0.67 (about 2 max Re λ(A)), while some directions of Σ collapse;
the flow turns stiff (eigenvalues of Σ spread over decades) and the explicit Runge–Kutta
method stalls on it (SPEC §11).

Variants: the number of heads, an anisotropic Σ0 (eigenvalues log-uniform over two decades in a
random basis), a non-zero mean and bias, A = 0 or A Hurwitz, and the random-sign family in
which each head's value and key parts take independent random signs.

Every layer is a `Params` of factored heads, `Head` (B_h = KᵀQ, V_h = OV), so flows and
equilibria use the O(d² r) products. A case is reproducible from (family, d, seed, variant) alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InvalidInputError
from ..state.params import Gaussian, Head, Params
from ..state.validation import as_seed

__all__ = ["VARIANTS", "FamilyCase", "family_cases", "initial_state", "opposite_sign_layer",
           "random_sign_layer"]

#: weight of the unrelated factor in each head (V_h = VᵀV + ε OᵀV, B_h ∝ KᵀK + ε QᵀK)
EPSILON = 0.1
#: heads of the paper-shape family
HEADS = 12
#: the named variants of `family_cases`, cycled through in this order
VARIANTS = ("base", "anisotropic", "mean", "heads4", "heads16", "heads8_mean_anisotropic")


def _head(rng: np.random.Generator, d: int, r: int, value_sign: float,
          key_sign: float) -> Head:
    """One head V_h = s_v (VᵀV + ε OᵀV), B_h = s_k (KᵀK + ε QᵀK)/√r from N(0, 1/d) factors."""
    V, O, K, Q = (rng.standard_normal((r, d)) / np.sqrt(d) for _ in range(4))
    return Head(Q=K, K=key_sign * (K + EPSILON * Q) / np.sqrt(r), V=V,
                O=value_sign * (V + EPSILON * O).T)


def _feed_forward(rng: np.random.Generator, d: int, a: float, noise: float,
                  hurwitz: bool) -> np.ndarray:
    """A = a I + (noise/√d) N; hurwitz: shifted so that max Re λ(A) = −a (a > 0)."""
    A = a * np.eye(d) + noise / np.sqrt(d) * rng.standard_normal((d, d))
    if hurwitz:
        A = A - (np.max(np.linalg.eigvals(A).real) + abs(a)) * np.eye(d)
    return A


def opposite_sign_layer(d: int, seed: int = 0, *, heads: int = HEADS, a: float = 0.3,
                        noise: float = 0.05, bias: float = 0.0,
                        hurwitz: bool = False) -> Params:
    """The stabilising-sign layer: V_h ⪰-dominant, B_h ⪯-dominant (module docstring).

    Parameters
    ----------
    d : int
        Token dimension (d ≥ heads keeps every head's rank d // heads ≥ 1).
    seed : int
        Seed of numpy's default_rng: the layer is a function of (d, seed, keywords).
    heads : int
        Number of heads H; each has rank max(1, d // H).
    a, noise : float
        A = a I + (noise/√d) N. a = 0 with noise = 0 gives A = 0.
    bias : float
        b = bias · u with u a random unit vector (0: b = 0).
    hurwitz : bool
        Shift A so that its spectral abscissa is −|a| (the Hurwitz variant).

    Returns
    -------
    Params
        The layer, its heads as `Head` factors.

    Raises
    ------
    InvalidInputError
        From `Params` / `Head` when d < 1 or a keyword makes an entry non-finite.

    See Also
    --------
    random_sign_layer : the same shape with random head signs.
    family_cases : seeded cases with their initial states.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures"
       (multi-head layers, B_h = KᵀQ, V_h = OV).

    Examples
    --------
    >>> from riccati_tf.empirical.families import opposite_sign_layer
    >>> p = opposite_sign_layer(24, seed=0)
    >>> len(p.heads), p.factors[0].Q.shape
    (12, (2, 24))
    """
    return _layer(d, seed, heads=heads, a=a, noise=noise, bias=bias, hurwitz=hurwitz,
                  random_signs=False)


def random_sign_layer(d: int, seed: int = 0, *, heads: int = HEADS, a: float = 0.3,
                      noise: float = 0.05, bias: float = 0.0, hurwitz: bool = False) -> Params:
    """The random-sign layer: as `opposite_sign_layer`, each head's value and key parts with
    independent random signs s_v, s_k ∈ {−1, +1} (V_h = s_v(VᵀV + ε OᵀV), B_h = s_k(...)/√r).

    Parameters
    ----------
    d, seed, heads, a, noise, bias, hurwitz
        As for `opposite_sign_layer`.

    Returns
    -------
    Params
        The layer, its heads as `Head` factors.

    Raises
    ------
    InvalidInputError
        From `Params` / `Head` when d < 1 or a keyword makes an entry non-finite.

    See Also
    --------
    opposite_sign_layer : every head with V_h ⪰-dominant and B_h ⪯-dominant.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures"
       (multi-head layers, B_h = KᵀQ, V_h = OV).

    Examples
    --------
    >>> from riccati_tf.empirical.families import random_sign_layer
    >>> random_sign_layer(24, seed=1).d
    24
    """
    return _layer(d, seed, heads=heads, a=a, noise=noise, bias=bias, hurwitz=hurwitz,
                  random_signs=True)


def _layer(d: int, seed: int, *, heads: int, a: float, noise: float, bias: float,
           hurwitz: bool, random_signs: bool) -> Params:
    rng = np.random.default_rng([as_seed("seed", seed), d, heads])
    r = max(1, d // heads)
    signs = (rng.choice([-1.0, 1.0], size=(heads, 2)) if random_signs
             else np.tile([1.0, -1.0], (heads, 1)))
    hs = [_head(rng, d, r, sv, sk) for sv, sk in signs]
    A = _feed_forward(rng, d, a, noise, hurwitz)
    u = rng.standard_normal(d)
    return Params(A, b=bias * u / np.linalg.norm(u), heads=hs)


def initial_state(d: int, seed: int = 0, *, anisotropic: bool = False,
                  mean: float = 0.0) -> Gaussian:
    """The initial Gaussian: Σ0 = I/2, or (anisotropic) Σ0 = U diag(λ) Uᵀ with λ log-uniform on
    [0.05, 5] and U a random orthogonal matrix; the mean is mean · (a random unit vector).

    Parameters
    ----------
    d : int
        Dimension.
    seed : int
        Seed of numpy's default_rng (with d).
    anisotropic : bool
        The random anisotropic Σ0 instead of I/2.
    mean : float
        The norm of m0.

    Returns
    -------
    Gaussian
        N(m0, Σ0).

    Raises
    ------
    InvalidInputError
        From `Gaussian` when d < 1 or mean is not finite.

    See Also
    --------
    family_cases : layers with their initial states.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures"
       (multi-head layers, B_h = KᵀQ, V_h = OV).

    Examples
    --------
    >>> from riccati_tf.empirical.families import initial_state
    >>> float(initial_state(4).cov[0, 0])
    0.5
    """
    rng = np.random.default_rng([as_seed("seed", seed), d, 7])
    if anisotropic:
        U, _ = np.linalg.qr(rng.standard_normal((d, d)))
        lam = np.exp(rng.uniform(np.log(0.05), np.log(5.0), d))
        cov = (U * lam) @ U.T
        cov = (cov + cov.T) / 2
    else:
        cov = np.eye(d) / 2
    u = rng.standard_normal(d)
    return Gaussian(mean * u / np.linalg.norm(u), cov)


@dataclass(frozen=True)
class FamilyCase:
    """One member of a family: its name (family, d, variant, seed), layer and initial state.

    Parameters
    ----------
    name : str
        "<family>-d<d>-<variant>-s<seed>".
    params : Params
        The layer.
    initial : Gaussian
        The initial state.

    Raises
    ------
    None
        A plain record.

    See Also
    --------
    family_cases : builds them.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures"
       (multi-head layers, B_h = KᵀQ, V_h = OV).

    Examples
    --------
    >>> from riccati_tf.empirical.families import family_cases
    >>> family_cases((24,), 1)[0].name
    'opposite-d24-base-s0'
    """

    name: str
    params: Params
    initial: Gaussian


def family_cases(sizes: tuple[int, ...], per_size: int, *, family: str = "opposite",
                 seed: int = 0) -> list[FamilyCase]:
    """per_size cases at each d of sizes, cycling through `VARIANTS`.

    Parameters
    ----------
    sizes : tuple of int
        The dimensions d.
    per_size : int
        Cases per dimension: case k uses variant VARIANTS[k mod 6] and seed seed + k.
    family : {"opposite", "random_sign", "zero_A", "hurwitz"}
        The stabilising-sign family, the random-sign family, or the stabilising-sign layers
        with A = 0 or with A Hurwitz (spectral abscissa −0.3).
    seed : int
        The first seed.

    Variants: "base" (12 heads, Σ0 = I/2, m = 0, b = 0), "anisotropic" (Σ0 of
    `initial_state(anisotropic=True)`), "mean" (|m0| = 1, |b| = 0.5), "heads4", "heads16",
    "heads8_mean_anisotropic" (8 heads with both).

    Returns
    -------
    list of FamilyCase
        len(sizes) · per_size cases, d-major.

    Raises
    ------
    InvalidInputError
        When family is not one of the four names.

    See Also
    --------
    opposite_sign_layer, random_sign_layer, initial_state : the pieces.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §1 "The model: a Transformer as a flow of measures"
       (multi-head layers, B_h = KᵀQ, V_h = OV).

    Examples
    --------
    >>> from riccati_tf.empirical.families import family_cases
    >>> [c.name for c in family_cases((24,), 2, family="hurwitz")]
    ['hurwitz-d24-base-s0', 'hurwitz-d24-anisotropic-s1']
    """
    layer = random_sign_layer if family == "random_sign" else opposite_sign_layer
    if family not in ("opposite", "random_sign", "zero_A", "hurwitz"):
        raise InvalidInputError(f"family must be 'opposite', 'random_sign', 'zero_A' or 'hurwitz', "
                         f"got {family!r}")
    seed = as_seed("seed", seed)
    variants: dict[str, dict[str, Any]] = {"zero_A": {"a": 0.0, "noise": 0.0},
                                           "hurwitz": {"hurwitz": True}}
    a_kw = variants.get(family, {})
    out = []
    for d in sizes:
        for k in range(per_size):
            variant, s = VARIANTS[k % len(VARIANTS)], seed + k
            heads = {"heads4": 4, "heads16": 16, "heads8_mean_anisotropic": 8}.get(variant,
                                                                                   HEADS)
            with_mean = variant in ("mean", "heads8_mean_anisotropic")
            p = layer(d, s, heads=heads, bias=0.5 if with_mean else 0.0, **a_kw)
            g = initial_state(d, s, anisotropic="anisotropic" in variant,
                              mean=1.0 if with_mean else 0.0)
            out.append(FamilyCase(f"{family}-d{d}-{variant}-s{s}", p, g))
    return out
