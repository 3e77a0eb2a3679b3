"""The Runge–Kutta flow of the moment system (``flow(..., method="rk")``, SPEC §2, §5): DOP853 on
(m, vec Σ), in t, or in Sundman's time σ (dt/dσ = s_ref / tr Σ) towards a pole, with the
blow-up time bracketed by the pole stop.

The modules follow the method: `constants` (the blow-up event, Sundman's time, the pole stop,
packing, budget and stiffness constants, each documented where it is defined), `packing` (the
packed coordinates (m, Σ_ij for i ≤ j) and DOP853 on them), `stepper` (the run in t, the growth
event and the stiffness monitor), `sundman` (the run in σ and the pole stop), `blowup` (the
blow-up estimate T_est = t + tr Σ/(d tr Σ/dt) and the refusal near a pole), `run` (the
right-hand side with its budget and the run from t to σ to the blow-up) and `dense` (the state
between the stored times); the entry point is `riccati_tf.flow`.
"""

__all__: list[str] = []
