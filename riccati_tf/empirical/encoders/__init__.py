"""Real Transformer encoders in the language of SPEC §1–§7: extraction of the factored layer
parameters (`extract`), Gaussian moment propagation through whole layers (`predict_moments`),
validation against the model itself (`compare`) and the stability atlas of its heads (`atlas`,
`plot_atlas`). torch and transformers are needed only by the functions that take a model."""

from .atlas import Atlas, atlas
from .comparison import Comparison, compare
from .extraction import extract, position_limit
from .factors import Encoder, EncoderLayer, HeadFactors, LayerNormParams, MLPParams
from .figures import plot_atlas, plot_comparison
from .progress import tty_progress
from .propagation import MomentPrediction, predict_moments
from .sequences import sequence_lengths
from .validity import ValidityMap, validity_map

__all__ = ["Atlas", "Comparison", "Encoder", "EncoderLayer", "HeadFactors", "LayerNormParams",
           "MLPParams", "MomentPrediction", "ValidityMap", "atlas", "compare", "extract",
           "plot_atlas", "plot_comparison",
           "position_limit", "predict_moments", "sequence_lengths", "tty_progress",
           "validity_map"]
