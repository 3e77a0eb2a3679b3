"""The stiff integrator of the moment flow (``flow(..., method="implicit")``): the Rosenbrock
method Rodas4 on (m, Σ), its linear systems solved with the structure of the Jacobian.

`tableau` holds the method's coefficients, `linear` the solves (I/(γh) − J) u = r, `stepper`
the error-controlled steps, `run` the flow from a state to the output times; the entry point
is `riccati_tf.flow`.
"""

__all__: list[str] = []
