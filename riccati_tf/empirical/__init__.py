"""The theory against data (SPEC §1, §7): finite clouds of tokens under softmax attention
(`particles`), tests of Gaussianity with their null distributions (`gaussianity`), the per-layer
probe of real Transformers (`probe`) and the moment propagation through whole encoder layers
(`encoders`). torch and transformers are imported only by the functions that take a model.
"""

from typing import TYPE_CHECKING

from ..lazy import attach

if TYPE_CHECKING:
    from .gaussianity import normality_test
    from .particles import simulate

__all__ = ["normality_test", "simulate"]

# loaded on first use (SciPy's statistics): the command line reads the defaults module alone
__getattr__, __dir__ = attach(__name__, {"normality_test": ".gaussianity",
                                         "simulate": ".particles"})
