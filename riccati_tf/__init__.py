"""riccati_tf: the Gaussian (mean-field) dynamics of Transformers as a Riccati control system.

    ṁ = (A + V) m + V Σ B m + b,    Σ̇ = A Σ + Σ Aᵀ + V Σ B Σ + Σ Bᵀ Σ Vᵀ
"""

from . import errors
from .certificates import Certificate, certify
from .equilibrium import Equilibrium, equilibria
from .flows import Trajectory, flow, layers
from .model import Gaussian, Head, Params
from .moments import moment_rhs
from .steering import ControlPlan, steer
from .sweep import SweepResult, run_sweep

__all__ = ["Certificate", "ControlPlan", "Equilibrium", "Gaussian", "Head", "Params", "SweepResult",
           "Trajectory", "certify", "equilibria", "errors", "flow", "layers", "moment_rhs",
           "run_sweep", "steer"]
__version__ = "0.1.0"
