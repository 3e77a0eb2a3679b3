"""The theory against data (SPEC §1, §7): finite clouds of tokens under softmax attention
(`particles`), tests of Gaussianity with their null distributions (`gaussianity`), the per-layer
probe of real Transformers (`probe`) and the moment propagation through whole encoder layers
(`encoders`). torch and transformers are imported only by the functions that take a model.
"""

from .gaussianity import normality_test
from .particles import simulate

__all__ = ["normality_test", "simulate"]
