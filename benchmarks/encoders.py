"""Real-encoder layer timings (run: python -m benchmarks.encoders).

A BERT-family encoder of MiniLM size (d = 384, 12 heads, 6 layers, intermediate 1536, 512
positions), randomly initialised from BertConfig in float64, is saved with save_pretrained into
a temporary folder and loaded back as the CLI loads a model. Timed, with one BLAS thread:

- extraction + moment prediction + atlas (budget BUDGET_ATLAS_S);
- the model comparison with N = 4096 Gaussian tokens, cut into 8 sequences of 512;
- the probe as `riccati-tf probe` runs it (`models.probe`: Gaussianity statistics with their
  simulated nulls, the affine residual of attention and the moment prediction) with N = 4096
  tokens (budget BUDGET_PROBE_S).
"""

from __future__ import annotations

import tempfile
import time

from benchmarks._timing import pin_one_thread

D, HEADS, LAYERS, POSITIONS, N_TOKENS = 384, 12, 6, 512, 4096
BUDGET_ATLAS_S, BUDGET_PROBE_S = 60.0, 120.0


def _saved_model(folder: str):
    import torch
    from transformers import BertConfig, BertModel

    from riccati_tf.empirical.encoders.loading import load_model

    torch.manual_seed(0)
    config = BertConfig(hidden_size=D, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                        intermediate_size=4 * D, max_position_embeddings=POSITIONS,
                        vocab_size=1000)
    BertModel(config).double().save_pretrained(folder)
    return load_model(folder)


def main() -> None:
    import torch

    from riccati_tf.empirical.encoders import extract, predict_moments
    from riccati_tf.empirical.encoders.atlas import atlas
    from riccati_tf.empirical.encoders.comparison import compare
    from riccati_tf.empirical.probe import probe

    _limiter, line = pin_one_thread()
    torch.set_num_threads(1)
    print(line + "; torch threads 1")
    with tempfile.TemporaryDirectory() as folder:
        model = _saved_model(folder)
        dtype = next(model.parameters()).dtype
        t0 = time.perf_counter()
        encoder = extract(model)
        t1 = time.perf_counter()
        prediction = predict_moments(encoder)
        t2 = time.perf_counter()
        result = atlas(encoder, prediction=prediction)
        t3 = time.perf_counter()
        comparison = compare(model, n_tokens=N_TOKENS, prediction=prediction)
        t4 = time.perf_counter()
        probed = probe(model, n_tokens=N_TOKENS)
        t5 = time.perf_counter()
    print(f"BertModel d={D}, {HEADS} heads, {LAYERS} layers, {POSITIONS} positions, {dtype}")
    print(f"extraction {t1 - t0:.2f} s, moment prediction {t2 - t1:.2f} s, atlas {t3 - t2:.2f} s:"
          f" total {t3 - t0:.2f} s (budget {BUDGET_ATLAS_S:.0f} s)")
    print(f"comparison with the model, N = {N_TOKENS} tokens in {len(comparison.lengths)} "
          f"sequences of {max(comparison.lengths)}: {t4 - t3:.2f} s")
    print(f"probe (statistics, nulls, attention residual, prediction), N = {N_TOKENS} tokens in "
          f"{len(probed.lengths)} sequences: {t5 - t4:.2f} s (budget {BUDGET_PROBE_S:.0f} s)")
    print(result.summary())
    print(comparison.summary())
    print(f"within budget: atlas {t3 - t0 <= BUDGET_ATLAS_S}, probe "
          f"{t5 - t4 <= BUDGET_PROBE_S}")


if __name__ == "__main__":
    main()
