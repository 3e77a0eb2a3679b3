"""Real-encoder layer timings (run: python -m benchmarks.encoders).

A BERT-family encoder of MiniLM size (d = 384, 12 heads, 6 layers, intermediate 1536, 512
positions), randomly initialised from BertConfig in float64, is saved with save_pretrained into
a temporary folder and loaded back as the CLI loads a model. Timed, with one BLAS thread:

- extraction + moment prediction + atlas (budget BUDGET_ATLAS_S);
- the model comparison with N = 4096 Gaussian tokens, cut into 8 sequences of 512;
- the probe as `riccati-tf probe` runs it (`models.probe`: Gaussianity statistics with their
  simulated nulls, the affine residual of attention and the moment prediction) with N = 4096
  tokens (budget BUDGET_PROBE_S).

Then the command line on real text: a trained-like encoder of the same shape
(`encoders.tiny.trained_like_encoder`: embedding-output trace 100, logit spreads 2–12, attention
blow-up times 0.4–5) saved with its WordPiece tokenizer (`save_encoder`), and a text file of
TEXT_PASSAGES passages; `riccati-tf probe --model DIR --text FILE` and `riccati-tf atlas --model
DIR --text FILE` with their defaults otherwise, each timed as a subprocess with one thread
(OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS = 1; torch reads OMP_NUM_THREADS), against
BUDGET_CLI_PROBE_S and BUDGET_CLI_ATLAS_S (CPU seconds: the atlas's 12 flows, 6 layers × 2
drifts, take about 500 right-hand sides of 3 d³ products each, `riccati_tf.flow` stopping at
the pole once T* is bracketed to LAYER_RTOL = 1e-7). `--cli-only` skips the first part.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._timing import pin_one_thread

D, HEADS, LAYERS, POSITIONS, N_TOKENS = 384, 12, 6, 512, 4096
BUDGET_ATLAS_S, BUDGET_PROBE_S = 60.0, 120.0
#: passages of the text file and the budgets of the two commands on it
TEXT_PASSAGES = 64
BUDGET_CLI_PROBE_S, BUDGET_CLI_ATLAS_S = 120.0, 60.0


def _text(path: Path, seed: int = 0) -> None:
    """TEXT_PASSAGES passages of 12–40 words of the tokenizer's vocabulary, one a line."""
    import numpy as np

    from riccati_tf.empirical.encoders.tiny import wordpiece_vocab

    words = [w for w in wordpiece_vocab() if w.isalpha() and len(w) > 1]
    rng = np.random.default_rng(seed)
    lines = [" ".join(rng.choice(words, int(rng.integers(12, 41)))) + "."
             for _ in range(TEXT_PASSAGES)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _timed(args: list[str]) -> tuple[float, float, str]:
    """Wall time and CPU time (user + system) of `riccati-tf args` in a subprocess with one
    thread, and its output (CPU ≈ wall on an idle core; wall grows on a shared one)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-m", "riccati_tf.app.cli", *args], env=env,
                         capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode:
        raise RuntimeError(f"riccati-tf {' '.join(args)} exited {run.returncode}: {run.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu, run.stdout


def cli_on_text() -> bool:
    """`riccati-tf probe/atlas --model DIR --text FILE` on a saved trained-like encoder; prints
    the times and returns whether both are within budget."""
    from riccati_tf.empirical.encoders.tiny import save_encoder, trained_like_encoder

    with tempfile.TemporaryDirectory() as tmp:
        folder, text = Path(tmp) / "model", Path(tmp) / "text.txt"
        start = time.perf_counter()
        save_encoder(trained_like_encoder(D, HEADS, LAYERS, max_positions=POSITIONS), folder)
        built = time.perf_counter() - start
        _text(text)
        t_probe, c_probe, out_probe = _timed(["probe", "--model", str(folder), "--text",
                                              str(text), "--out", str(Path(tmp) / "probe")])
        t_atlas, c_atlas, out_atlas = _timed(["atlas", "--model", str(folder), "--text",
                                              str(text), "--out", str(Path(tmp) / "atlas")])
    print(f"trained-like BertModel d={D}, {HEADS} heads, {LAYERS} layers, built and saved with "
          f"its tokenizer in {built:.1f} s")
    print(out_probe.splitlines()[1] if len(out_probe.splitlines()) > 1 else out_probe)
    print(f"riccati-tf probe --model DIR --text FILE: {t_probe:.1f} s wall, {c_probe:.1f} s "
          f"CPU (budget {BUDGET_CLI_PROBE_S:.0f} s)")
    print(f"riccati-tf atlas --model DIR --text FILE: {t_atlas:.1f} s wall, {c_atlas:.1f} s "
          f"CPU (budget {BUDGET_CLI_ATLAS_S:.0f} s)")
    print(out_atlas)
    # the budgets are CPU seconds on one core: wall time also counts waiting on a shared one
    ok_probe, ok_atlas = c_probe <= BUDGET_CLI_PROBE_S, c_atlas <= BUDGET_CLI_ATLAS_S
    print(f"within budget (CPU): probe {ok_probe}, atlas {ok_atlas}")
    return ok_probe and ok_atlas


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

    if "--cli-only" in sys.argv[1:]:
        _limiter, line = pin_one_thread()
        torch.set_num_threads(1)
        print(line + "; torch threads 1")
        cli_on_text()
        return

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
    cli_on_text()


if __name__ == "__main__":
    main()
