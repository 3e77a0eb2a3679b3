"""What a layer's errors against the baselines say, with the sampling floor as the scale (SPEC §7).

One layer ℓ predicted from the measured moments of layer ℓ − 1 has the covariance errors
e_pred, e_no_change, e_no_attention and e_oracle (`comparison.Baselines`), the floor f of a
deterministic method (the error of an exact Gaussian sample of the measured moments at the
same n) and the oracle's floor f₂ (one such sample against another). The verdict is, in this
order:

- "not_applicable":  e_oracle ≥ NOT_APPLICABLE_RATIO · f₂ and e_oracle > 0 — a Gaussian
  pushed through the real layer and moment-matched misses the measured moments by several
  floors, so no Gaussian closure describes the layer and a comparison of closures says nothing
  about the theory;
- "within_floor":    |min(e_no_change, e_no_attention) − e_pred| ≤ f — the prediction and the
  best baseline differ by less than the sampling noise of one error;
- "beats":           the prediction's error is below the best baseline's by more than f;
- "loses":           it is above it by more than f;
- "undetermined":    an error or a floor is not a finite number.

A margin below the floor is no evidence either way: a verdict "beats" is only given when the
margin exceeds it.
"""

from __future__ import annotations

import math

__all__ = ["NOT_APPLICABLE_RATIO", "VERDICTS", "layer_verdict"]

#: the oracle's error, in units of its own floor, from which no Gaussian closure applies
NOT_APPLICABLE_RATIO = 3.0
#: the verdicts of `layer_verdict`, in the order they are decided
VERDICTS = ("undetermined", "not_applicable", "within_floor", "beats", "loses")


def layer_verdict(errors: dict[str, float], floor: float, oracle_floor: float) -> str:
    """The verdict on one layer's covariance errors against the baselines (module docstring).

    Parameters
    ----------
    errors : dict of str to float
        The one-layer covariance errors of "prediction", "no_change", "no_attention" and
        "oracle".
    floor : float
        The floor f of a deterministic method at this layer.
    oracle_floor : float
        The oracle's floor f₂ (two independent samples).

    Returns
    -------
    str
        One of VERDICTS.

    Raises
    ------
    KeyError
        If a method's error is missing.

    See Also
    --------
    riccati_tf.empirical.encoders.comparison.Comparison.verdicts : per layer of a comparison.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> e = {"prediction": 0.46, "no_change": 0.50, "no_attention": 0.47, "oracle": 0.12}
    >>> layer_verdict(e, floor=0.06, oracle_floor=0.08)
    'within_floor'
    >>> layer_verdict({**e, "prediction": 0.30}, floor=0.06, oracle_floor=0.08)
    'beats'
    >>> layer_verdict({**e, "oracle": 0.38}, floor=0.06, oracle_floor=0.08)
    'not_applicable'
    """
    values = [*errors.values(), floor, oracle_floor]
    if not all(math.isfinite(v) for v in values):
        return "undetermined"
    if errors["oracle"] > 0 and errors["oracle"] >= NOT_APPLICABLE_RATIO * oracle_floor:
        return "not_applicable"
    margin = min(errors["no_change"], errors["no_attention"]) - errors["prediction"]
    if abs(margin) <= floor:
        return "within_floor"
    return "beats" if margin > 0 else "loses"
