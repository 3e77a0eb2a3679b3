"""Stability and controllability together: the Lie-algebra rank around a designed layer (SPEC §4).

A layer designed or repaired for stability holds its parameters at fixed values; around it the
time-varying control system ż = f0(z) + Σ_i u_i g_i(z) lets some of them move in depth (the
configurations of `riccati_tf.reachability.lie`) while the others stay at the designed values.
`joint_controllability` asks, at the target Gaussian, whether that system keeps the Lie-algebra
rank condition — whether the design stabilised by giving up reachability.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError
from ..reachability.lie import (
    CONFIGURATIONS,
    DEFAULT_DEPTH,
    MAX_DIMENSION,
    Accessibility,
    accessibility_rank,
)
from ..state.params import Gaussian, Params
from . import _arguments

__all__ = ["JointControllability", "joint_controllability"]

#: the configurations checked by default: the attention's query–key and the value matrix
#: moving in depth, the others held at the layer's values
DEFAULT_CONFIGURATIONS = ("attention", "values")


@dataclass(frozen=True)
class JointControllability:
    """The Lie-algebra rank around a layer, per control configuration, at a Gaussian.

    For each configuration c the controls of c move and every other parameter is held at the
    layer's value (A, V, B, b; a multi-head layer with scalar values V_h = v_h I as the single
    head V = v̄I, B = Σ_h v_h B_h / v̄, v̄ = Σ_h v_h ≠ 0, which has the same moment
    equations). `full[i]` is the rank condition rank = d + r d − r(r−1)/2 of configuration i
    on the stratum of rank r = rank Σ.

    Parameters
    ----------
    configurations : tuple of str
        The configurations checked.
    results : tuple of Accessibility or None
        `accessibility_rank` of each, with the held values; None where it was not decided.
    decided : bool
        Whether the rank was computed (d ≤ MAX_DIMENSION and a layer with one head, or with
        scalar value matrices of nonzero sum).
    reason : str
        What the verdict means, or why there is none.

    Raises
    ------
    None
        A plain record; `joint_controllability` validates its arguments.

    See Also
    --------
    joint_controllability : computes it.
    riccati_tf.reachability.lie.accessibility_rank : the rank of one configuration.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §4 "Reachability (time-varying controls)".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.design.joint import joint_controllability
    >>> from riccati_tf.state.params import Gaussian, Params
    >>> p = Params(0.5 * np.eye(2), B=np.eye(2), V=-np.eye(2))
    >>> jc = joint_controllability(p, Gaussian(np.zeros(2), np.eye(2)))
    >>> jc.decided, jc.full
    (True, (True, True))
    """

    configurations: tuple[str, ...]
    results: tuple[Accessibility | None, ...]
    decided: bool
    reason: str

    @property
    def full(self) -> tuple[bool, ...]:
        """Whether each configuration keeps the rank condition (False where undecided)."""
        return tuple(bool(r is not None and r.full) for r in self.results)


def joint_controllability(params: Params, point: Gaussian,
                          configurations: Sequence[str] = DEFAULT_CONFIGURATIONS,
                          depth: int = DEFAULT_DEPTH) -> JointControllability:
    """Whether the control system around a layer keeps the Lie-algebra rank at a Gaussian.

        rank span{[X_1, [X_2, …, X_k]](z*) : k ≤ depth} = d + r d − r(r−1)/2,   z* = (m*, Σ*),

    for each configuration's fields X_i ∈ {f0, g_1, …}, the drift f0 holding every parameter
    that is not a control at the layer's value (exact rational arithmetic,
    `riccati_tf.reachability.lie.accessibility_rank`).

    Parameters
    ----------
    params : Params
        The layer (designed or repaired): one head, or several with scalar value matrices.
    point : Gaussian
        Where the rank is taken, typically the target N(m*, Σ*).
    configurations : sequence of str, optional
        Names of `riccati_tf.reachability.lie.CONFIGURATIONS` (default "attention" and
        "values").
    depth : int, optional
        The longest bracket (default `DEFAULT_DEPTH`).

    Returns
    -------
    JointControllability
        Per configuration the rank against the stratum dimension; undecided (with the reason)
        for d > MAX_DIMENSION or several heads without a single-head form.

    Raises
    ------
    InvalidInputError
        When params is not a Params, point is not a Gaussian of the same dimension, or a
        configuration is not registered.

    See Also
    --------
    riccati_tf.design.target.attracting_layer : designed layers to check.

    Notes
    -----
    By Nagano's theorem the rank is constant along orbits: a configuration short of full rank
    at the target cannot steer a neighbourhood of it whatever the controls do, so a stable
    design that loses the rank trades reachability for stability.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §4 "Reachability (time-varying controls)".

    Examples
    --------
    With the value matrix held at 0 the attention's query–key moves nothing:

    >>> import numpy as np
    >>> from riccati_tf.design.joint import joint_controllability
    >>> from riccati_tf.state.params import Gaussian, Params
    >>> p = Params(0.5 * np.eye(2))
    >>> joint_controllability(p, Gaussian(np.zeros(2), np.eye(2)), ["attention"]).full
    (False,)
    """
    if not isinstance(params, Params):
        raise InvalidInputError(f"params must be a riccati_tf Params, got {type(params).__name__}")
    if not isinstance(point, Gaussian) or point.d != params.d:
        raise InvalidInputError(f"point must be a riccati_tf Gaussian on R^{params.d}")
    names = _arguments.names("configurations", configurations, sorted(CONFIGURATIONS))
    held = _single_head(params)
    if params.d > MAX_DIMENSION or held is None:
        why = (f"d = {params.d} > {MAX_DIMENSION}, beyond the exact Lie-bracket computation"
               if params.d > MAX_DIMENSION else
               f"{len(params.heads)} heads with general value matrices (or scalar ones summing "
               f"to 0) have no single-head form")
        return JointControllability(names, (None,) * len(names), False,
                                    f"not decided: {why}.")
    results = tuple(accessibility_rank(
        name, params.d, (point.mean, point.cov), depth,
        fixed={k: v for k, v in held.items() if k not in CONFIGURATIONS[name].controls})
        for name in names)
    lost = [name for name, r in zip(names, results, strict=True) if not r.full]
    reason = ("every configuration keeps the Lie-algebra rank at the point" if not lost else
              f"{', '.join(lost)} {'loses' if len(lost) == 1 else 'lose'} the Lie-algebra rank "
              f"at the point: with the other parameters held at the layer's values these "
              f"controls cannot steer a neighbourhood of it")
    return JointControllability(names, results, True, reason + ".")


def _single_head(p: Params) -> dict[str, np.ndarray] | None:
    """{"A", "B", "V", "b"} of a layer with one head, or of the single head V = v̄I,
    B = Σ_h v_h B_h / v̄ with the same moment equations when every V_h = v_h I and
    v̄ = Σ_h v_h ≠ 0 (ṁ = (A + v̄I)m + Σ(Σ_h v_h B_h)m + b, Σ̇ = AΣ + ΣAᵀ + Σ(Σ_h v_h B_h)Σ +
    transpose); None otherwise."""
    if len(p.heads) == 1:
        V, B = p.heads[0]
        return {"A": np.asarray(p.A), "B": np.asarray(B), "V": np.asarray(V), "b": np.asarray(p.b)}
    vbar = sum(p.value_scalars or ())
    if p.value_scalars is None or vbar == 0:
        return None
    B = sum((v * np.asarray(Bh) for v, (_, Bh) in zip(p.value_scalars, p.heads, strict=True)),
            np.zeros((p.d, p.d))) / vbar
    return {"A": np.asarray(p.A), "B": B, "V": vbar * np.eye(p.d), "b": np.asarray(p.b)}
