"""Random layer parameters and Gaussians for the tests (one generator, used everywhere)."""

from __future__ import annotations

import numpy as np

from riccati_tf import Gaussian, Params


def random_cov(rng: np.random.Generator, d: int, rank: int | None = None,
               scale: float = 1.0) -> np.ndarray:
    """A PSD matrix of the given rank (full rank by default)."""
    r = d if rank is None else rank
    X = rng.standard_normal((d, r))
    return scale * X @ X.T / max(r, 1)


def scalar_v_params(rng: np.random.Generator, d: int, *, v: float | None = None,
                    heads: int = 1, b: bool = True, a_scale: float = 1.0) -> Params:
    """Params with value matrices V_h = v_h I (the Riccati case of SPEC §5)."""
    A = a_scale * rng.standard_normal((d, d)) / np.sqrt(d)
    bias = rng.standard_normal(d) if b else None
    pairs = [((rng.uniform(-1, 1) if v is None else v) * np.eye(d),
              rng.standard_normal((d, d)) / np.sqrt(d)) for _ in range(heads)]
    if heads == 1:
        return Params(A=A, V=pairs[0][0], B=pairs[0][1], b=bias)
    return Params(A=A, heads=pairs, b=bias)


def general_params(rng: np.random.Generator, d: int, heads: int = 1) -> Params:
    pairs = [(rng.standard_normal((d, d)) / np.sqrt(d), rng.standard_normal((d, d)) / np.sqrt(d))
             for _ in range(heads)]
    return Params(A=rng.standard_normal((d, d)) / np.sqrt(d), heads=pairs,
                  b=rng.standard_normal(d))


def random_gaussian(rng: np.random.Generator, d: int, rank: int | None = None,
                    scale: float = 1.0) -> Gaussian:
    return Gaussian(rng.standard_normal(d), random_cov(rng, d, rank, scale))
