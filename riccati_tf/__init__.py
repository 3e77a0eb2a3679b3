"""riccati_tf: the Gaussian (mean-field) dynamics of Transformers as a Riccati control system.

    ṁ = (A + V) m + V Σ B m + b,    Σ̇ = A Σ + Σ Aᵀ + V Σ B Σ + Σ Bᵀ Σ Vᵀ
"""

from . import errors
from .flows.integrate import Trajectory, flow, layers
from .reachability.steering import ControlPlan, steer
from .stability.certificates import Certificate, certify
from .stability.equilibria import Equilibrium, equilibria
from .state.moments import moment_rhs
from .state.params import Gaussian, Head, Params
from .sweep import SweepResult, run_sweep

__all__ = ["Certificate", "ControlPlan", "Equilibrium", "Gaussian", "Head", "Params", "SweepResult",
           "Trajectory", "certify", "equilibria", "errors", "flow", "layers", "moment_rhs",
           "run_sweep", "steer"]
__version__ = "0.1.0"
