"""Loading a saved encoder (no download) and capturing its hidden states and attention
sublayers for Gaussian input tokens placed at the embedding output. torch and transformers are
imported inside the functions only."""

from __future__ import annotations

import numpy as np

from ...errors import InvalidInputError

#: the largest hidden size of a model this package loads
MAX_HIDDEN = 4096


def require_transformers() -> None:
    """Raise ImportError with the install command when torch or transformers is missing."""
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise ImportError("the Transformer probe needs torch and transformers: "
                          "pip install 'riccati-tf[models]'") from exc


def load_model(path: str):
    """transformers.AutoModel.from_pretrained(path) from a local directory (no download), in
    evaluation mode. Any failure to load is an InvalidInputError naming the path."""
    from pathlib import Path

    if not isinstance(path, str | Path):
        raise InvalidInputError(f"model path must be a str or a Path, got {type(path).__name__}")
    require_transformers()
    from transformers import AutoModel

    try:
        ok = (Path(path) / "config.json").is_file()
    except OSError:  # a name too long, ...
        ok = False
    if not ok:
        raise InvalidInputError(f"model path {str(path)!r} is not a directory holding a saved "
                                f"transformers model (config.json and weights)")
    try:
        model = AutoModel.from_pretrained(path, local_files_only=True).eval()
    except Exception as exc:  # a foreign folder: whatever fails is the folder's fault
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InvalidInputError(f"model path {str(path)!r}: transformers could not load it "
                                f"({type(exc).__name__}: {detail})") from None
    hidden = getattr(model.config, "hidden_size", None)
    if not isinstance(hidden, int) or not 1 <= hidden <= MAX_HIDDEN:
        raise InvalidInputError(f"model path {str(path)!r}: hidden_size {hidden!r} is not an "
                                f"integer in [1, {MAX_HIDDEN}] (encoders.loading.MAX_HIDDEN)")
    return model


def layer_list(model) -> list:
    """The encoder layers of a transformers encoder (BERT/RoBERTa/ViT/DeiT: encoder.layer;
    ModernBERT: layers)."""
    for path in ("encoder.layer", "layers", "encoder.layers"):
        obj = model
        for name in path.split("."):
            obj = getattr(obj, name, None)
        if obj is not None:
            return list(obj)
    raise InvalidInputError(f"{type(model).__name__} has no list of encoder layers")


def attention_child(layer):
    """The module computing the attention sublayer: a descendant whose class name ends in
    "SelfAttention" (BERT, RoBERTa: softmax attention alone, without the residual and the
    post-norm LayerNorm of its parent), else the first child ending in "Attention"."""
    for _, module in layer.named_modules():
        if type(module).__name__.endswith("SelfAttention"):
            return module
    for _, child in layer.named_children():
        if type(child).__name__.endswith("Attention"):
            return child
    return None


def dummy_inputs(model, n_tokens: int) -> dict:
    """Inputs whose embedding output the hook replaces (their values never reach the layers)."""
    import torch

    config = model.config
    dtype = next(model.parameters()).dtype
    if model.main_input_name == "pixel_values":
        size = config.image_size
        return {"pixel_values": torch.zeros(1, config.num_channels, size, size, dtype=dtype)}
    return {"inputs_embeds": torch.zeros(1, n_tokens, config.hidden_size, dtype=dtype)}


def capture(model, tokens: np.ndarray) -> tuple[list[np.ndarray], list, list]:
    """Run the encoder on one sequence `tokens` (n, d) placed at the embedding output.

    Returns (hidden, attn_in, attn_out): hidden[0] = tokens, hidden[ℓ] the output of layer ℓ;
    attn_in[ℓ−1], attn_out[ℓ−1] the input and output of layer ℓ's attention module
    (`attention_child`; None if it has none). All as float64 numpy arrays of shape (n, d).
    """
    import torch

    embeddings = getattr(model, "embeddings", None)
    if embeddings is None:
        raise InvalidInputError(f"{type(model).__name__} has no `embeddings` module to feed")
    dtype = next(model.parameters()).dtype
    x = torch.tensor(tokens[None], dtype=dtype)
    layers = layer_list(model)
    hidden = [None] * len(layers)
    attn_in, attn_out = [None] * len(layers), [None] * len(layers)

    def first(value):
        return value[0] if isinstance(value, tuple | list) else value

    def as_numpy(t):
        return t[0].detach().to(torch.float64).cpu().numpy()

    def keep_layer(i):
        def hook(_module, _args, output):
            hidden[i] = as_numpy(first(output))
        return hook

    def keep_attention(i):
        def hook(_module, args, kwargs, output):
            attn_in[i] = as_numpy(args[0] if args else kwargs["hidden_states"])
            attn_out[i] = as_numpy(first(output))
        return hook

    handles = [embeddings.register_forward_hook(lambda _m, _a, _o: x)]
    for i, layer in enumerate(layers):
        handles.append(layer.register_forward_hook(keep_layer(i)))
        attention = attention_child(layer)
        if attention is not None:
            handles.append(attention.register_forward_hook(keep_attention(i), with_kwargs=True))
    try:
        with torch.inference_mode():
            model(**dummy_inputs(model, tokens.shape[0]))
    finally:
        for handle in handles:
            handle.remove()
    return [np.asarray(tokens, dtype=float), *hidden], attn_in, attn_out
