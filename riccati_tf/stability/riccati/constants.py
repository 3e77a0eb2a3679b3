"""The tolerances of the Riccati layer: the imaginary-axis gap, the fast-path residual and
the singularity threshold of a symmetric solve."""

from __future__ import annotations

import numpy as np

__all__ = ["AXIS_RTOL", "FAST_PATH_RESIDUAL", "SINGULAR_RCOND"]

#: an eigenvalue λ of A counts as on the imaginary axis when |Re λ| ≤ AXIS_RTOL · ‖A‖_F
AXIS_RTOL = 1e-8
#: the fast path hands over to SLICOT when its relative residual exceeds this
FAST_PATH_RESIDUAL = 1e-10
#: a symmetric matrix counts as singular when its reciprocal 1-norm condition is below this
SINGULAR_RCOND = 1e3 * np.finfo(float).eps
