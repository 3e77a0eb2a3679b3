"""Loading a saved encoder (no download) and capturing its hidden states and attention
sublayers for Gaussian input tokens placed at the embedding output. torch and transformers are
imported inside the functions only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...errors import InvalidInputError

__all__ = ["MAX_HIDDEN", "capture", "load_model"]

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


def load_model(path: str | Path) -> Any:
    """A saved transformers encoder from a local directory (no download), in evaluation mode.

    transformers.AutoModel.from_pretrained(path, local_files_only=True): the model whose layers
    SPEC §7 probes with Gaussian tokens.

    Parameters
    ----------
    path : str or pathlib.Path
        A directory written by save_pretrained (config.json and weights).

    Returns
    -------
    transformers.PreTrainedModel
        The model, in evaluation mode, with an integer hidden size in [1, MAX_HIDDEN].

    Raises
    ------
    InvalidInputError
        If path is not a str or Path, is not a directory holding config.json, transformers
        cannot load it (any failure, named in the message), or the hidden size is not an
        integer in [1, MAX_HIDDEN].
    ImportError
        Without torch and transformers (the install command in the message).

    See Also
    --------
    capture : the hidden states of the model for given tokens.
    riccati_tf.empirical.probe.probe : the per-layer Gaussianity of the model.
    riccati_tf.empirical.encoders.extract : the factored layer parameters.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import tempfile
    >>> from riccati_tf.empirical.encoders.loading import load_model
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=1).save_pretrained(folder)
    ...     model = load_model(folder)
    >>> type(model).__name__, model.config.hidden_size
    ('BertModel', 8)
    >>> load_model("no/such/folder")
    Traceback (most recent call last):
        ...
    riccati_tf.errors.InvalidInputError: model path 'no/such/folder' is not a directory ...
    """
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


def layer_list(model: Any) -> list[Any]:
    """The encoder layers of a transformers encoder (BERT/RoBERTa/ViT/DeiT: encoder.layer;
    ModernBERT: layers)."""
    for path in ("encoder.layer", "layers", "encoder.layers"):
        obj = model
        for name in path.split("."):
            obj = getattr(obj, name, None)
        if obj is not None:
            return list(obj)
    raise InvalidInputError(f"{type(model).__name__} has no list of encoder layers")


def attention_child(layer: Any) -> Any:
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


def dummy_inputs(model: Any, n_tokens: int) -> dict[str, Any]:
    """Inputs whose embedding output the hook replaces (their values never reach the layers)."""
    import torch

    config = model.config
    dtype = next(model.parameters()).dtype
    if model.main_input_name == "pixel_values":
        size = config.image_size
        return {"pixel_values": torch.zeros(1, config.num_channels, size, size, dtype=dtype)}
    return {"inputs_embeds": torch.zeros(1, n_tokens, config.hidden_size, dtype=dtype)}


def capture(model: Any, tokens: np.ndarray) -> tuple[list[np.ndarray], list[Any], list[Any]]:
    """Run the encoder on one sequence `tokens` (n, d) placed at the embedding output.

    A forward hook replaces the output of the model's `embeddings` module by the tokens (the
    empirical measure of one sequence, SPEC §7), and hooks on every layer and every attention
    module keep their inputs and outputs.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        An encoder with an `embeddings` module and a list of layers.
    tokens : (n, d) ndarray of float
        One sequence, d the hidden size (n within the model's position limit).

    Returns
    -------
    hidden : list of (n, d) ndarray
        hidden[0] = tokens, hidden[ℓ] the output of layer ℓ (L + 1 arrays).
    attn_in : list of (n, d) ndarray or None
        attn_in[ℓ−1] the input of layer ℓ's attention module (`attention_child`; None if it
        has none).
    attn_out : list of (n, d) ndarray or None
        The output of that module.

    Raises
    ------
    InvalidInputError
        If the model has no `embeddings` module or no list of encoder layers.
    RuntimeError
        From torch when the tokens do not fit the model (e.g. a wrong hidden size).

    See Also
    --------
    load_model : a saved model.
    riccati_tf.empirical.encoders.compare : the moments of the captured states against the
        prediction.

    References
    ----------
    .. [1] riccati_tf theory, SPEC §7 "Validation against real Transformers".

    Examples
    --------
    >>> import numpy as np
    >>> from riccati_tf.empirical.encoders.loading import capture
    >>> from riccati_tf.empirical.encoders.tiny import tiny_encoder
    >>> model = tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=2)
    >>> x = np.random.default_rng(0).standard_normal((16, 8))
    >>> hidden, attn_in, attn_out = capture(model, x)
    >>> len(hidden), hidden[2].shape, attn_out[0].shape, bool(np.array_equal(hidden[0], x))
    (3, (16, 8), (16, 8), True)
    """
    import torch

    embeddings = getattr(model, "embeddings", None)
    if embeddings is None:
        raise InvalidInputError(f"{type(model).__name__} has no `embeddings` module to feed")
    dtype = next(model.parameters()).dtype
    x = torch.tensor(tokens[None], dtype=dtype)
    layers = layer_list(model)
    hidden: list[Any] = [None] * len(layers)
    attn_in: list[Any] = [None] * len(layers)
    attn_out: list[Any] = [None] * len(layers)

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
