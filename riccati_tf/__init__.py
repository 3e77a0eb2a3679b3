"""riccati_tf: the Gaussian (mean-field) dynamics of Transformers as a Riccati control system.

    ṁ = (A + V) m + V Σ B m + b,    Σ̇ = A Σ + Σ Aᵀ + V Σ B Σ + Σ Bᵀ Σ Vᵀ
"""

from . import errors
from .flows import Trajectory, flow, layers
from .model import Gaussian, Params
from .moments import moment_rhs

__all__ = ["Gaussian", "Params", "Trajectory", "errors", "flow", "layers", "moment_rhs"]
__version__ = "0.1.0"
