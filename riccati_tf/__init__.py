"""riccati_tf: the Gaussian (mean-field) dynamics of Transformers as a Riccati control system.

    ṁ = (A + V) m + V Σ B m + b,    Σ̇ = A Σ + Σ Aᵀ + V Σ B Σ + Σ Bᵀ Σ Vᵀ

The mathematics and notation ("SPEC §n" in the docstrings) ship with the package:
``importlib.resources.files("riccati_tf").joinpath("SPEC.md").read_text()``.
"""

from typing import TYPE_CHECKING

from . import errors
from .lazy import attach
from .state.moments import moment_rhs
from .state.params import Gaussian, Head, Params

if TYPE_CHECKING:
    from .flows.integrate import Trajectory, flow, layers
    from .reachability.steering import ControlPlan, steer
    from .stability.certificates.certificate import Certificate
    from .stability.certificates.entry import certify
    from .stability.equilibria import Equilibrium, equilibria
    from .sweep import SweepResult, run_sweep

__all__ = ["Certificate", "ControlPlan", "Equilibrium", "Gaussian", "Head", "Params", "SweepResult",
           "Trajectory", "certify", "equilibria", "errors", "flow", "layers", "moment_rhs",
           "run_sweep", "steer"]
__version__ = "0.1.0"

# the solvers load on first use (SciPy, SymPy, python-control): `import riccati_tf` stays light
__getattr__, __dir__ = attach(__name__, {
    "Trajectory": ".flows.integrate", "flow": ".flows.integrate", "layers": ".flows.integrate",
    "ControlPlan": ".reachability.steering", "steer": ".reachability.steering",
    "Certificate": ".stability.certificates.certificate",
    "certify": ".stability.certificates.entry",
    "Equilibrium": ".stability.equilibria", "equilibria": ".stability.equilibria",
    "SweepResult": ".sweep", "run_sweep": ".sweep"})
