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

from ..errors import InvalidInputError
from ..reachability.lie import (
    CONFIGURATIONS,
    DEFAULT_DEPTH,
    MAX_DIMENSION,
    Accessibility,
    accessibility_rank,
    layer_system,
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
    layer's value: A, b and, per head, V_h or B_h; with several heads each head's moving matrix
    is a control of its own (`riccati_tf.reachability.lie.layer_system`). `full[i]` is the rank
    condition rank = d + r d − r(r−1)/2 of configuration i on the stratum of rank r = rank Σ,
    proven when True; False means that the brackets up to the depth span fewer directions (a
    lower bound of the Lie-algebra rank: longer brackets may add more).

    Parameters
    ----------
    configurations : tuple of str
        The configurations checked.
    results : tuple of Accessibility or None
        `accessibility_rank` of each, with the held values; None where it was not decided.
    decided : bool
        Whether the rank was computed (d ≤ MAX_DIMENSION).
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
        """Whether each configuration keeps the rank condition, proven by brackets up to the
        depth (False where it is not shown, or undecided)."""
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
        The layer (designed or repaired), any number of heads.
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
        Per configuration the rank found against the stratum dimension; undecided (with the
        reason) for d > MAX_DIMENSION.

    Raises
    ------
    InvalidInputError
        When params is not a Params, point is not a Gaussian of the same dimension,
        configurations is not a name or a non-empty list of registered names (None refused), or
        depth is not an integer in [1, MAX_DEPTH].
    SolverError
        When a bracket computation spends its work budget (`lie.MAX_WORK`).

    See Also
    --------
    riccati_tf.design.target.attracting_layer : designed layers to check.

    Notes
    -----
    The fields are those of `riccati_tf.reachability.lie.layer_system`: with H heads the
    "values" configuration has the H d² fields (E_kl m + E_klΣB_h m, E_klΣB_hΣ + ΣB_hᵀΣE_lk),
    one per head and entry, "attention" the fields of each head's B_h; the drift holds A, b and
    the held matrices of every head. A rank equal to the stratum dimension proves the rank
    condition; a smaller rank is what brackets up to `depth` reach, a lower bound of the
    Lie-algebra rank. By Nagano's theorem the rank is constant along orbits: were the
    Lie-algebra rank short at the target, no control could steer a neighbourhood of it.

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
    if params.d > MAX_DIMENSION:
        return JointControllability(names, (None,) * len(names), False,
                                    f"not decided: d = {params.d} > {MAX_DIMENSION}, beyond the "
                                    f"exact Lie-bracket computation.")
    results = tuple(accessibility_rank(layer_system(name, params), params.d,
                                       (point.mean, point.cov), depth) for name in names)
    short = [f"{name} (rank {r.rank} of {r.expected})"
             for name, r in zip(names, results, strict=True) if not r.full]
    reason = ("every configuration keeps the Lie-algebra rank at the point" if not short else
              f"brackets up to depth {depth} of {', '.join(short)} do not span the stratum at "
              f"the point: the rank condition is not shown there (the Lie-algebra rank is at "
              f"least the rank found; longer brackets may add directions)")
    return JointControllability(names, results, True, reason + ".")

