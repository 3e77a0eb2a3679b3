"""Real Transformer encoders in the language of SPEC §1–§7: extraction of the factored layer
parameters, Gaussian moment propagation through whole layers, validation against the model and
the stability atlas of its heads. torch and transformers are needed only by the functions that
take a model."""

from .extraction import extract, position_limit
from .factors import Encoder, EncoderLayer, HeadFactors, LayerNormParams, MLPParams
from .propagation import MomentPrediction, predict_moments

__all__ = ["Encoder", "EncoderLayer", "HeadFactors", "LayerNormParams", "MLPParams",
           "MomentPrediction", "extract", "position_limit", "predict_moments"]
