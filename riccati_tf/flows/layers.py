"""Discrete residual layers x⁺ = x + τ X(x) acting on a Gaussian, exactly (SPEC §2): `layers`."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ..errors import InvalidInputError, SolverError
from ..state.params import Gaussian, Params, check_dims
from ..state.validation import as_count, as_time
from .trajectory import Trajectory, _finite_params, _guard

__all__: list[str] = []  # layers, LAYERS_DEFAULT_MAX, LAYERS_MAX_FLOATS: riccati_tf.flows.integrate


#: layers: default largest number of layers, and the largest output (floats) kept in memory
LAYERS_DEFAULT_MAX = 1_000_000
LAYERS_MAX_FLOATS = 2**27


def layers(params: Params | Sequence[Params], gaussian: Gaussian, n_layers: int,
           tau: float, *, max_steps: int | None = None) -> Trajectory:
    """Exact discrete residual layers x⁺ = x + τ X(x) acting on N(m, Σ).

    An affine field maps Gaussians to Gaussians exactly, layer by layer (SPEC §2):

        m⁺ = (I + τM) m + τc,   Σ⁺ = (I + τM) Σ (I + τM)ᵀ,
        M = A + Σ_h V_h Σ B_h,   c = b + Σ_h V_h m.

    Overflow: a finite stack of layers has no finite-time blow-up (each layer is a finite map),
    but Σ⁺ is quartic in Σ and can leave the floating-point range. The states are then returned
    up to the last finite layer with status "blowup", blowup_time the depth n τ of the first
    layer that overflows and blowup_kind "overflow" — not "singularity", the finite-time blow-up
    of the continuous flow that `flow` reports.

    Parameters
    ----------
    params : Params or sequence of Params
        One layer for every step, or a sequence of n_layers layers (the k-th acts at depth
        k τ).
    gaussian : Gaussian
        The input N(m0, Σ0).
    n_layers : int
        The number of layers, ≥ 1.
    tau : float
        The step τ > 0 of the residual connection.
    max_steps : int, optional
        The largest n_layers accepted (default LAYERS_DEFAULT_MAX = 1 000 000); the states kept
        must also fit in LAYERS_MAX_FLOATS floats.

    Returns
    -------
    Trajectory
        One state per layer at the times 0, τ, ..., n_layers τ (method "layers", no dense
        output), or up to the last finite layer with status "blowup".

    Raises
    ------
    InvalidInputError
        When n_layers or max_steps is not an integer ≥ 1, tau is not a positive finite time,
        params is neither a Params nor a sequence of n_layers Params, a layer and the Gaussian
        live in different R^d, or a layer holds NaN or Inf.
    SolverError
        Before any work, when n_layers exceeds max_steps or the states would not fit in
        LAYERS_MAX_FLOATS floats; when the depths n τ overflow float64.

    See Also
    --------
    flow : the continuous-depth limit τ → 0.
    Trajectory : the result.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §2 "Gaussian invariance and the moment equations".
    .. [2] B. Geshkovski, C. Letrouit, Y. Polyanskiy, P. Rigollet, "A mathematical perspective
       on Transformers", arXiv:2312.10794, 2023.

    Examples
    --------
    With A = −1 and τ = 1/2, each layer halves the mean and quarters the variance:

    >>> from riccati_tf import Gaussian, Params, layers
    >>> tr = layers(Params(-1.0), Gaussian([1.0], [[1.0]]), n_layers=3, tau=0.5)
    >>> tr.t
    array([0. , 0.5, 1. , 1.5])
    >>> tr.cov[:, 0, 0]
    array([1.      , 0.25    , 0.0625  , 0.015625])

    Attention makes Σ⁺ quartic in Σ; the state overflows after a few layers:

    >>> tr = layers(Params(0.0, B=1.0, V=1.0), Gaussian([0.0], [[1.0]]), n_layers=20, tau=1.0)
    >>> tr.status, tr.blowup_kind, tr.blowup_time
    ('blowup', 'overflow', 7.0)
    """
    n_layers = as_count("n_layers", n_layers)
    tau = as_time("tau", tau)
    limit = LAYERS_DEFAULT_MAX if max_steps is None else as_count("max_steps", max_steps)
    if n_layers > limit:
        raise SolverError(f"n_layers = {n_layers} exceeds max_steps = {limit} layers")
    layer_at: Callable[[int], Params]
    if isinstance(params, Params):
        single = params
        distinct = [single]
        layer_at = lambda _k: single  # noqa: E731
    else:
        plist = list(params) if isinstance(params, Sequence) else None
        if plist is None or len(plist) != n_layers:
            raise InvalidInputError("params must be a Params or a sequence of n_layers = "
                                    f"{n_layers} Params")
        distinct = list({id(p): p for p in plist}.values())
        layer_at = plist.__getitem__
    for p in distinct:
        check_dims(p, gaussian)
        if not _finite_params(p):
            raise InvalidInputError("params holds NaN or Inf entries")
    d = gaussian.d
    if (n_layers + 1) * (d * d + d) > LAYERS_MAX_FLOATS:
        raise SolverError(f"{n_layers + 1} states of dimension {d} need "
                          f"{8 * (n_layers + 1) * (d * d + d) / 2**30:.3g} GiB, more than the "
                          f"{8 * LAYERS_MAX_FLOATS / 2**30:.3g} GiB kept in memory")
    m, S = gaussian.mean.copy(), gaussian.cov.copy()
    means, covs = [m], [S]
    status, t_blow = "completed", None
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(n_layers):
            p = layer_at(k)
            F = np.eye(d) + tau * p.M(S)
            m = F @ m + tau * p.c(m)
            S = F @ S @ F.T
            S = 0.5 * (S + S.T)
            if not (np.all(np.isfinite(S)) and np.all(np.isfinite(m))):
                status, t_blow = "blowup", (k + 1) * tau
                break
            means.append(m)
            covs.append(S)
    t = tau * np.arange(len(means))
    if not (math.isfinite(float(t[-1])) and (t_blow is None or math.isfinite(t_blow))):
        raise SolverError("the layer depths n τ overflow float64")
    return _guard(Trajectory(t, np.array(means), np.array(covs), status, t_blow, "layers",
                             blowup_kind=None if t_blow is None else "overflow"))
