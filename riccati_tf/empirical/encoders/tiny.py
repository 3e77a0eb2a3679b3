"""Small randomly initialised float64 encoders of every supported family (no download): for
tests, benchmarks and demonstrations."""

from __future__ import annotations

from ...errors import InvalidInputError
from ...state.validation import as_count

TINY_FAMILIES = ("bert", "roberta", "vit", "deit", "modernbert")


def tiny_encoder(family: str = "bert", *, hidden_size: int = 32, n_heads: int = 4,
                 n_layers: int = 2, intermediate_size: int | None = None,
                 max_positions: int = 512, activation: str = "gelu",
                 initializer_range: float = 0.02, seed: int = 0):
    """A float64 transformers encoder of the family with random weights N(0, initializer_range²)
    (biases as transformers initialises them: zero), in evaluation mode. max_positions: the
    position limit of the text families; intermediate_size defaults to 4·hidden_size."""
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
