"""Real-encoder command timings on real-sized text (run: python -m benchmarks.encoders).

The case measured is a sentence encoder of MiniLM size on about 14k tokens of text: a
trained-like BERT encoder (d = 384, 12 heads, 6 layers, intermediate 1536, 512 positions;
`encoders.tiny.trained_like_encoder`: embedding-output trace 100, logit spreads 2–12, attention
blow-up times 0.4–5) saved with its WordPiece tokenizer (`save_encoder`), and a text file of
TEXT_PASSAGES passages of PASSAGE_WORDS words of its vocabulary, one a line (its token count,
about 14 000, is printed). `riccati-tf probe`, `atlas` and `compare --model DIR --text FILE`,
with their defaults otherwise, are each timed as a subprocess with one thread
(OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS = 1; torch reads OMP_NUM_THREADS)
against its budget in BUDGETS (CPU seconds, user + system), and each says whether it is within
it. The atlas's 12 flows (6 layers × 2 drifts, each integrated at LAYER_RTOL and at
LAYER_RTOL/10 for its error estimate) and 6 normalised flows take about 18 000 right-hand sides
of three d³ products each (`riccati_tf.flow` stopping at the pole once T* is bracketed to
LAYER_RTOL = 1e-7).

`--gaussian` adds, first, the timings in process on a randomly initialised BERT of the same
shape in float64 with N_TOKENS Gaussian tokens in sequences of 512: extraction + moment
prediction + atlas (budget BUDGET_ATLAS_S), the comparison with the model, and the probe as
`riccati-tf probe` runs it (`models.probe`: Gaussianity statistics with their simulated nulls,
the affine residual of attention and the moment prediction; budget BUDGET_PROBE_S).
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
#: passages of the text file and the range of their word counts (about 14 000 tokens in all)
TEXT_PASSAGES, PASSAGE_WORDS = 119, (84, 146)
#: CPU seconds each command may take on the text
BUDGETS = {"probe": 90.0, "atlas": 60.0, "compare": 120.0}


def _text(path: Path, seed: int = 0) -> None:
    """TEXT_PASSAGES passages of PASSAGE_WORDS words of the tokenizer's vocabulary, one a
    line."""
    import numpy as np

    from riccati_tf.empirical.encoders.tiny import wordpiece_vocab

    words = [w for w in wordpiece_vocab() if w.isalpha() and len(w) > 1]
    rng = np.random.default_rng(seed)
    low, high = PASSAGE_WORDS
    lines = [" ".join(rng.choice(words, int(rng.integers(low, high + 1)))) + "."
             for _ in range(TEXT_PASSAGES)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _token_count(folder: Path, text: Path) -> int:
    """The tokens the model's own tokenizer makes of the text, [CLS] and [SEP] included."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    lines = [t for t in text.read_text(encoding="utf-8").splitlines() if t.strip()]
    return sum(len(tokenizer(t)["input_ids"]) for t in lines)


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
    """`riccati-tf probe/atlas/compare --model DIR --text FILE` on a saved trained-like encoder
    and about 14k tokens of text; prints each command's times against its budget and returns
    whether all are within budget."""
    from riccati_tf.empirical.encoders.tiny import save_encoder, trained_like_encoder

    ok = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder, text = Path(tmp) / "model", Path(tmp) / "text.txt"
        start = time.perf_counter()
        save_encoder(trained_like_encoder(D, HEADS, LAYERS, max_positions=POSITIONS), folder)
        built = time.perf_counter() - start
        _text(text)
        print(f"trained-like BertModel d={D}, {HEADS} heads, {LAYERS} layers, built and saved "
              f"with its tokenizer in {built:.1f} s; text: {TEXT_PASSAGES} passages, "
              f"{_token_count(folder, text)} tokens")
        for command, budget in BUDGETS.items():
            wall, cpu, out = _timed([command, "--model", str(folder), "--text", str(text),
                                     "--out", str(Path(tmp) / command)])
            # the budgets are CPU seconds on one core: wall time also counts waiting on a
            # shared one
            ok[command] = cpu <= budget
            print(out)
            print(f"riccati-tf {command} --model DIR --text FILE: {wall:.1f} s wall, {cpu:.1f} s "
                  f"CPU (budget {budget:.0f} s): "
                  f"{'within budget' if ok[command] else 'OVER BUDGET'}", flush=True)
    print("within budget (CPU): " + ", ".join(f"{c} {v}" for c, v in ok.items()))
    return all(ok.values())


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


def gaussian_tokens() -> bool:
    """In process, on a randomly initialised BERT with N_TOKENS Gaussian tokens: extraction +
    prediction + atlas, the comparison and the probe; returns whether the atlas and the probe
    are within BUDGET_ATLAS_S and BUDGET_PROBE_S."""
    from riccati_tf.empirical.encoders import extract, predict_moments
    from riccati_tf.empirical.encoders.atlas import atlas
    from riccati_tf.empirical.encoders.comparison import compare
    from riccati_tf.empirical.probe import probe

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
    ok_atlas, ok_probe = t3 - t0 <= BUDGET_ATLAS_S, t5 - t4 <= BUDGET_PROBE_S
    print(f"within budget: atlas {ok_atlas}, probe {ok_probe}")
    return ok_atlas and ok_probe


def main() -> None:
    import torch

    _limiter, line = pin_one_thread()
    torch.set_num_threads(1)
    print(line + "; torch threads 1")
    if "--gaussian" in sys.argv[1:]:
        gaussian_tokens()
    cli_on_text()


if __name__ == "__main__":
    main()
