"""Small randomly initialised float64 encoders of every supported family (no download): for
tests, benchmarks and demonstrations."""

from __future__ import annotations

from typing import Any

from ...errors import InvalidInputError
from ...state.validation import as_count

__all__ = ["TINY_FAMILIES", "tiny_encoder"]

TINY_FAMILIES = ("bert", "roberta", "vit", "deit", "modernbert")


def tiny_encoder(family: str = "bert", *, hidden_size: int = 32, n_heads: int = 4,
                 n_layers: int = 2, intermediate_size: int | None = None,
                 max_positions: int = 512, activation: str = "gelu",
                 initializer_range: float = 0.02, seed: int = 0) -> Any:
    """A small float64 transformers encoder of the family with random weights (no download).

    Weights N(0, initializer_range²) and biases as transformers initialises them (zero), in
    evaluation mode: the models SPEC §7 asks tests to run on in place of pretrained weights.

    Parameters
    ----------
    family : {"bert", "roberta", "vit", "deit", "modernbert"}, optional
        The model family (TINY_FAMILIES; default "bert").
    hidden_size : int, optional
        The hidden size d, ≥ 1 (default 32; a multiple of n_heads for transformers).
    n_heads : int, optional
        Attention heads, ≥ 1 (default 4).
    n_layers : int, optional
        Encoder layers, ≥ 1 (default 2).
    intermediate_size : int, optional
        Hidden units of the feed-forward block (default 4·hidden_size).
    max_positions : int, optional
        The position limit of the text families (default 512).
    activation : str, optional
        The transformers activation name (default "gelu").
    initializer_range : float, optional
        The standard deviation of the weights (default 0.02).
    seed : int, optional
        The torch seed of the weights (default 0).

    Returns
    -------
    transformers.PreTrainedModel
        The encoder, float64, in evaluation mode.

    Raises
    ------
    InvalidInputError
        For a family outside TINY_FAMILIES or a count that is not a positive integer.
    ImportError
        Without torch and transformers.
    ValueError
        From transformers for a configuration it refuses (e.g. hidden_size not a multiple of
        n_heads).

    See Also
    --------
    riccati_tf.empirical.probe.tiny_model : the models of the probe, with bounds.
    riccati_tf.empirical.encoders.extract : the factored parameters of the model.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> model = tiny_encoder("roberta", hidden_size=8, n_heads=2, n_layers=1)
    >>> type(model).__name__, str(next(model.parameters()).dtype), model.training
    ('RobertaModel', 'torch.float64', False)
    """
    import torch
    import transformers as tf

    if family not in TINY_FAMILIES:
        raise InvalidInputError(f"family must be one of {TINY_FAMILIES}, got {family!r}")
    hidden_size = as_count("hidden_size", hidden_size)
    common = {"hidden_size": hidden_size,
              "num_hidden_layers": as_count("n_layers", n_layers),
              "num_attention_heads": as_count("n_heads", n_heads),
              "intermediate_size": intermediate_size or 4 * hidden_size,
              "initializer_range": initializer_range}
    torch.manual_seed(seed)
    if family in ("bert", "roberta"):
        config_cls, model_cls = ((tf.BertConfig, tf.BertModel) if family == "bert" else
                                 (tf.RobertaConfig, tf.RobertaModel))
        config = config_cls(vocab_size=64, max_position_embeddings=max_positions,
                            hidden_act=activation, hidden_dropout_prob=0.0,
                            attention_probs_dropout_prob=0.0, **common)
    elif family in ("vit", "deit"):
        config_cls, model_cls = ((tf.ViTConfig, tf.ViTModel) if family == "vit" else
                                 (tf.DeiTConfig, tf.DeiTModel))
        config = config_cls(image_size=32, patch_size=16, hidden_act=activation,
                            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                            **common)
    else:
        config_cls, model_cls = tf.ModernBertConfig, tf.ModernBertModel
        config = config_cls(vocab_size=64, max_position_embeddings=max_positions,
                            global_attn_every_n_layers=1, hidden_activation=activation,
                            pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1,
                            sep_token_id=2, **common)
    return model_cls(config).double().eval()
