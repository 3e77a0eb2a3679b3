"""The command line: valid specs give results, invalid specs one line naming the field, exit 2."""

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from riccati_tf import Gaussian, Params, certify, flow
from riccati_tf.app.cli import main
from riccati_tf.io.paths import relative_paths

PARAMS = {"A": [[0.5, 0.0], [0.0, 0.5]], "B": [[1.0, 0.0], [0.0, 1.0]], "V": [[-1, 0], [0, -1]]}
INITIAL = {"mean": [1.0, 0.0], "cov": [[1.0, 0.3], [0.3, 0.5]]}


def run(tmp_path, capsys, spec, *args, name="spec.json", text=None):
    path = tmp_path / name
    path.write_text(text if text is not None else json.dumps(spec))
    code = main([*args[:1], str(path), *args[1:]])
    out, err = capsys.readouterr()
    return code, out, err


def test_flow_json_matches_library(tmp_path, capsys):
    spec = {"params": PARAMS, "initial": INITIAL, "t_final": 3.0, "t_eval": [0.0, 1.5, 3.0]}
    code, out, _ = run(tmp_path, capsys, spec, "flow", "--json")
    assert code == 0
    got = json.loads(out)
    ref = flow(Params(**PARAMS), Gaussian(**INITIAL), 3.0, t_eval=[0.0, 1.5, 3.0])
    np.testing.assert_allclose(got["cov"], ref.cov, rtol=1e-14)
    assert got["method"] == "exact" and got["status"] == "completed"


def test_flow_yaml_and_plot(tmp_path, capsys):
    text = ("params: {A: [[1, 0], [0, 1]], B: [[1, 0], [0, 1]], V: [[1, 0], [0, 1]]}\n"
            "initial: {mean: [0, 0], cov: [[1, 0], [0, 1]]}\nt_final: 2\n")
    plot = tmp_path / "f.png"
    code, out, _ = run(tmp_path, capsys, None, "flow", "--plot", str(plot), name="s.yaml",
                       text=text)
    assert code == 0 and "blowup" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_layers_valid(tmp_path, capsys):
    spec = {"params": PARAMS, "initial": INITIAL, "n_layers": 4, "tau": 0.1}
    code, out, _ = run(tmp_path, capsys, spec, "layers", "--json")
    assert code == 0 and len(json.loads(out)["t"]) == 5


@pytest.mark.parametrize("command, spec, message", [
    ("flow", {"initial": INITIAL, "t_final": 1.0}, "params: missing field"),
    ("flow", {"params": {"A": [[1.0, 2.0]]}, "initial": INITIAL, "t_final": 1.0}, "square"),
    ("flow", {"params": PARAMS, "initial": {"mean": [0, 0], "cov": [[1, 2], [2, 1]]},
              "t_final": 1.0}, "not positive semidefinite"),
    ("flow", {"params": PARAMS, "initial": INITIAL, "t_final": "1e3"}, "t_final: must be a number"),
    ("flow", {"params": {**PARAMS, "A": [[1, "x"], [0, 1]]}, "initial": INITIAL, "t_final": 1},
     "params.A[0][1]"),
    ("layers", {"params": PARAMS, "initial": INITIAL, "tau": 0.1}, "n_layers: missing field"),
    ("layers", {"params": PARAMS, "initial": INITIAL, "n_layers": 2.5, "tau": 0.1},
     "n_layers: must be an integer"),
    ("layers", {"params": PARAMS, "initial": {"mean": [0, 0], "cov": [[1, 0], [0, float("nan")]]},
                "n_layers": 2, "tau": 0.1}, "NaN"),
])
def test_invalid_specs_exit_2_with_one_line(tmp_path, capsys, command, spec, message):
    code, _, err = run(tmp_path, capsys, spec, command)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_unreadable_and_malformed_files(tmp_path, capsys):
    assert main(["flow", str(tmp_path / "missing.json")]) == 2
    code, _, err = run(tmp_path, capsys, None, "flow", text="{not json", name="x.json")
    assert code == 2 and "not valid JSON" in err


def test_console_script_help():
    out = subprocess.run([sys.executable, "-m", "riccati_tf.app.cli", "--help"],
                         capture_output=True, text=True, check=True).stdout
    for command in ("flow", "layers", "report"):
        assert command in out


def test_probe_on_a_locally_saved_tiny_model(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from riccati_tf.empirical.probe import tiny_model

    model_dir = tmp_path / "tiny-deit"
    tiny_model("deit", hidden_size=32, n_layers=2, n_heads=2).save_pretrained(model_dir)
    out = tmp_path / "out"
    code = main(["probe", "--model", str(model_dir), "--out", str(out), "--n-tokens", "300",
                 "--n-null", "40"])
    printed = capsys.readouterr().out
    assert code == 0
    assert (out / "probe.png").read_bytes()[:4] == b"\x89PNG"
    numbers = json.loads((out / "probe.json").read_text())
    assert (out / numbers["model_path"]).resolve() == model_dir.resolve()  # relative to out
    assert "layer" in printed


@pytest.mark.parametrize("folder", ["nowhere", "empty"])
def test_probe_rejects_a_folder_without_a_model(tmp_path, capsys, folder):
    pytest.importorskip("transformers")
    (tmp_path / "empty").mkdir()
    code = main(["probe", "--model", str(tmp_path / folder), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and folder in err and len(err.strip().splitlines()) == 1


SCALAR = {"A": [[0.5, 0.1], [-0.1, 0.4]], "B": [[1.0, 0.2], [0.2, 0.6]], "V": [[-1, 0], [0, -1]]}
GENERAL = {"A": [[-0.3, 0.2], [0.0, -0.2]], "B": [[0.5, 0.1], [0.0, 0.3]],
           "V": [[0.4, 0.1], [-0.2, 0.3]]}
TARGET = {"mean": [-1.0, 2.0], "cov": [[2.0, -0.4], [-0.4, 0.7]]}
VALID = {
    "derive": {"d": 2, "heads": 2},
    "equilibria": {"params": SCALAR, "which": "all"},
    "certify": {"params": SCALAR, "initial": INITIAL},
    "steer": {"start": INITIAL, "target": TARGET, "t_final": 1.0},
    "particles": {"params": GENERAL, "initial": INITIAL, "n_tokens": 400, "t_final": 0.2,
                  "n_steps": 2, "seed": 1},
}
INVALID = [
    ("derive", {"heads": 2}, "d: missing field"),
    ("derive", {"d": 2, "kernel": "cosine"}, "kernel: must be one of"),
    ("equilibria", {"params": {"A": [[1.0, 0.0]]}}, "square"),
    ("equilibria", {"params": SCALAR, "which": "some"}, "which: must be one of"),
    ("certify", {"params": SCALAR}, "initial: missing field"),
    ("certify", {"params": SCALAR, "initial": {"mean": [0, 0], "cov": [[1, 3], [3, 1]]}},
     "not positive semidefinite"),
    ("steer", {"start": INITIAL, "target": {"mean": [0, 0], "cov": [[1, 0], [0, 0]]}, "T": 1.0},
     "rank"),
    ("steer", {"start": INITIAL, "target": TARGET}, "t_final: missing field"),
    ("particles", {"params": GENERAL, "initial": INITIAL, "n_tokens": 1, "t_final": 0.2,
                   "n_steps": 2}, "n_tokens: must be ≥ 2"),
    ("particles", {"params": GENERAL, "initial": {"mean": [0, float("nan")], "cov": [[1, 0],
                   [0, 1]]}, "n_tokens": 100, "t_final": 0.2, "n_steps": 2}, "NaN"),
]


@pytest.mark.parametrize("command", VALID)
def test_subcommand_with_valid_spec(tmp_path, capsys, command):
    plot = tmp_path / "fig.png"
    extra = [] if command in ("derive", "equilibria") else ["--plot", str(plot)]
    code, out, err = run(tmp_path, capsys, VALID[command], command, "--json", *extra)
    assert code == 0, err
    result = json.loads(out)
    if extra:
        assert plot.read_bytes()[:4] == b"\x89PNG"
    if command == "derive":
        assert result["exact"] is True and "\\Sigma" in result["latex"]
    elif command == "equilibria":
        assert any(e["stable"] for e in result["equilibria"])
        assert all(e["residual"] < 1e-12 for e in result["equilibria"])
    elif command == "certify":
        assert result["regime"] == "converges" and result["check"] is True
    elif command == "steer":
        assert result["success"] is True and result["residual"] < 1e-8
    else:
        assert max(result["cov_rel_error"]) < 0.2


@pytest.mark.parametrize("command, spec, message", INVALID)
def test_subcommand_with_invalid_spec(tmp_path, capsys, command, spec, message):
    code, _, err = run(tmp_path, capsys, spec, command)
    assert code == 2, err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_numerical_failure_exits_3(tmp_path, capsys, monkeypatch):
    """A SolverError from the library is reported as a numerical failure, exit code 3."""
    import riccati_tf.flows.integrate as flows
    from riccati_tf.errors import SolverError

    def fail(*_args, **_kwargs):
        raise SolverError("the Runge–Kutta integration failed at t = 0.5")

    monkeypatch.setattr(flows, "flow", fail)
    spec = {"params": PARAMS, "initial": INITIAL, "t_final": 1.0}
    code, _, err = run(tmp_path, capsys, spec, "flow")
    assert code == 3 and "numerical failure" in err


@pytest.mark.parametrize("command, flag", [("prescribed", "--json"), ("relu-drift", "--json"),
                                           ("prescribed", None)])
def test_experiment_subcommands(tmp_path, capsys, command, flag):
    code = main([command, "--n-tokens", "200", "--out", str(tmp_path), *([flag] if flag else [])])
    out = capsys.readouterr().out
    assert code == 0
    name = command.replace("-", "_")
    assert (tmp_path / f"{name}.png").exists()
    written = json.loads((tmp_path / f"{name}.json").read_text())
    assert written["n_tokens"] == 200
    if flag:  # the file holds the printed numbers, its paths relative to its folder
        assert relative_paths(json.loads(out), tmp_path) == written
    else:  # a summary: the blow-up time and the crossing table, not a JSON dump
        assert not out.lstrip().startswith("{")
        assert f"T* = {written['blowup_time']:.6g}" in out and "particles" in out


@pytest.mark.parametrize("command", ["prescribed", "relu-drift"])
@pytest.mark.parametrize("args, message", [(["--n-tokens", "1"], "n_tokens must be ≥"),
                                           (["--seed", "-3"], "seed must be ≥ 0")])
def test_experiment_subcommands_reject_bad_arguments(tmp_path, capsys, command, args, message):
    code = main([command, *args, "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_report_refuses_a_file_as_output_folder(tmp_path, capsys):
    target = tmp_path / "taken"
    target.write_text("not a folder")
    assert main(["report", "--quick", "--out", str(target)]) == 2
    assert "is not a folder" in capsys.readouterr().err


# --- strict and bounded input: regressions of the hostile corpus (tests/hostile/cases_cli.py) --

FLOW_YAML = ("params: {A: [[0.5, 0.0], [0.0, 0.5]], B: [[1.0, 0.0], [0.0, 1.0]], "
             "V: [[-1, 0], [0, -1]]}\ninitial: {mean: [1.0, 0.0], cov: [[1.0, 0.3], [0.3, 0.5]]}\n")
FLOW = {"params": PARAMS, "initial": INITIAL, "t_final": 1.0}


def one_line(code, err, needle, exit_code=2):
    lines = err.strip().splitlines()
    assert code == exit_code, err
    assert len(lines) == 1 and needle in lines[0] and "unexpected" not in err, err


@pytest.mark.parametrize("command, name, text, needle", [
    ("flow", "s.yaml", "params: {A: [[1e400]]}\ninitial: {mean: [0], cov: [[1]]}\nt_final: 1\n",
     "params.A[0][0]: '1e400' is beyond the float range"),
    ("flow", "s.json", '{"params": {"A": [[1' + "0" * 400 + ']]}}', "params.A[0][0]: the integer"),
    ("particles", "s.json", '{"n_tokens": 1' + "0" * 400 + "}", "n_tokens: the integer"),
    ("flow", "s.json", '{"t_final": NaN}', "t_final: NaN is not a number in JSON"),
    ("flow", "s.json", '{"t_eval": [0, -Infinity]}', "t_eval[1]: -Infinity"),
    ("flow", "s.json", '{"t_final": 1, "t_final": 2}', "t_final: the key appears twice"),
    ("certify", "s.yaml", "initial: {mean: [0], mean: [1]}\n", "initial.mean: the key appears"),
    ("derive", "s.json", "", "the spec file is empty"),
    ("derive", "s.yaml", "# only a comment\n", "the spec file is empty"),
    ("steer", "s.json", "[1, 2]", "must be a mapping of fields, got a list"),
    ("layers", "s.json", '{"t_eval": ' + "[" * 50_000 + "]" * 50_000 + "}", "nested more than"),
    ("layers", "s.yaml", "d: 1\n1: 2\n", "keys must be strings"),
    ("equilibria", "s.yaml", "params: !!python/object/apply:os.system ['true']\n",
     "not valid YAML"),
    ("flow", "s.yaml", "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefg", "bcdefgh",
                                                                    strict=True)),
     "MAX_YAML_ALIASES"),
])
def test_hostile_spec_files_are_refused_in_one_line(tmp_path, capsys, command, name, text,
                                                    needle):
    code, _, err = run(tmp_path, capsys, None, command, name=name, text=text)
    one_line(code, err, needle)


def test_non_utf8_and_binary_spec_files(tmp_path, capsys):
    for data in (b'{"t_final": "\xff"}', bytes(range(256))):
        (tmp_path / "s.json").write_bytes(data)
        code = main(["flow", str(tmp_path / "s.json")])
        one_line(code, capsys.readouterr().err, "not UTF-8")


def test_yaml_is_read_as_yaml_1_2(tmp_path):
    from riccati_tf.io.spec import load_spec

    path = tmp_path / "s.yaml"
    path.write_text("a: 1e3\nb: 1E3\nc: .5\nd: -2e-3\ne: 0o17\nf: 0x1F\ng: 012\nh: yes\n"
                    "i: 1_000\nj: 2001-12-14\nk: true\nl: ~\nm: +1.5\n")
    got = load_spec(path)
    assert got == {"a": 1000.0, "b": 1000.0, "c": 0.5, "d": -0.002, "e": 15, "f": 31, "g": 12,
                   "h": "yes", "i": "1_000", "j": "2001-12-14", "k": True, "l": None, "m": 1.5}
    assert isinstance(got["a"], float) and isinstance(got["e"], int)


def test_yaml_1_2_numbers_give_the_library_result(tmp_path, capsys):
    text = FLOW_YAML.replace("0.5, 0.0], [0.0, 0.5]", "5e-1, 0.0], [0.0, .5]") + "t_final: 1e0\n"
    code, out, _ = run(tmp_path, capsys, None, "flow", "--json", name="s.yaml", text=text)
    assert code == 0
    ref = flow(Params(**PARAMS), Gaussian(**INITIAL), 1.0)
    np.testing.assert_allclose(json.loads(out)["cov"], ref.cov, rtol=1e-14, atol=0)


@pytest.mark.parametrize("command, spec, needle", [
    ("flow", {**FLOW, "metod": "exact"}, "metod: unknown field; did you mean 'method'?"),
    ("flow", {**FLOW, "initial": {**INITIAL, "covv": 1}}, "initial.covv: unknown field"),
    ("flow", {**FLOW, "params": {**PARAMS, "W": 1}}, "params.W: unknown field"),
    ("flow", {**FLOW, "params": {"A": PARAMS["A"], "heads": [{"V": 1, "B": 1, "K": 1}]}},
     "params.heads[0].K: unknown field"),
    ("layers", {"initial": INITIAL, "n_layers": 1, "tau": 0.1,
                "layers": [{**PARAMS, "bb": 1}]}, "layers[0].bb: unknown field"),
    ("derive", {"d": 2, "head": 2}, "did you mean 'heads'"),
    ("equilibria", {"params": PARAMS, "wich": "all"}, "did you mean 'which'"),
    ("certify", {"params": PARAMS, "inital": INITIAL}, "did you mean 'initial'"),
    ("steer", {"start": INITIAL, "target": {**INITIAL, "sigma": 1}, "T": 1},
     "target.sigma: unknown field"),
    ("particles", {**VALID["particles"], "nsteps": 2}, "did you mean 'n_steps'"),
])
def test_unknown_keys_are_refused_at_every_level(tmp_path, capsys, command, spec, needle):
    code, _, err = run(tmp_path, capsys, spec, command)
    one_line(code, err, needle)


@pytest.mark.parametrize("command, spec, needle", [
    ("flow", {**FLOW, "t_eval": [0, "1"]}, "t_eval[1]: must be a number"),
    ("flow", {**FLOW, "rtol": "1e-8"}, "rtol: must be a number"),
    ("flow", {**FLOW, "initial": {"mean": [True, 0], "cov": INITIAL["cov"]}},
     "initial.mean[0]: must be a number or a list of numbers, got the boolean True"),
    ("flow", {**FLOW, "params": {**PARAMS, "b": [None, 0]}}, "params.b[0]"),
    ("layers", {"params": PARAMS, "initial": INITIAL, "n_layers": "3", "tau": 0.1},
     "n_layers: must be an integer"),
    ("steer", {"start": INITIAL, "target": TARGET, "T": "1"}, "T: must be a number"),
    ("steer", {"start": INITIAL, "target": TARGET, "t_final": -1}, "t_final: must be positive"),
    ("steer", {"start": INITIAL, "target": TARGET, "t_final": 1, "T": 1}, "give the horizon once"),
    ("steer", {"start": INITIAL, "target": TARGET, "T": 1, "controls": 3}, "controls:"),
])
def test_strings_and_other_non_numbers_are_refused(tmp_path, capsys, command, spec, needle):
    code, _, err = run(tmp_path, capsys, spec, command)
    one_line(code, err, needle)


@pytest.mark.parametrize("command, spec, needle", [
    ("layers", {"params": PARAMS, "initial": INITIAL, "n_layers": 10 ** 9, "tau": 0.1},
     "cli.MAX_LAYERS"),
    ("particles", {**VALID["particles"], "n_tokens": 10 ** 12}, "cli.MAX_TOKENS"),
    ("particles", {**VALID["particles"], "n_steps": 10 ** 9}, "cli.MAX_STEPS"),
    ("particles", {**VALID["particles"], "n_tokens": 50_000, "n_steps": 1000},
     "cli.MAX_PARTICLE_WORK"),
    ("particles", {**VALID["particles"], "seed": -1}, "seed: must be ≥ 0"),
    ("particles", {**VALID["particles"], "seed": 2 ** 64}, "validation.MAX_SEED"),
    ("flow", {**FLOW, "t_eval": [0.0] * 20_000}, "cli.MAX_T_EVAL"),
    ("flow", {**FLOW, "params": {"A": np.eye(65).tolist()}}, "spec.MAX_DIM"),
    ("derive", {"d": 2, "heads": 10 ** 6}, "spec.MAX_HEADS"),
    ("steer", {"start": {"mean": [0] * 9, "cov": np.eye(9).tolist()},
               "target": {"mean": [1] * 9, "cov": np.eye(9).tolist()}, "T": 1},
     "cli.STEER_MAX_DIM"),
])
def test_sizes_are_bounded_before_allocation(tmp_path, capsys, command, spec, needle):
    code, _, err = run(tmp_path, capsys, spec, command)
    one_line(code, err, needle)


def test_plot_path_is_checked_before_computing(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    for target in (tmp_path, tmp_path / "file" / "fig.png", "/dev/null/fig.png"):
        code, out, err = run(tmp_path, capsys, FLOW, "flow", "--json", "--plot", str(target))
        one_line(code, err, "--plot")
        assert out == ""


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_result_is_printed_before_a_figure_that_cannot_be_written(tmp_path, capsys):
    code, out, err = run(tmp_path, capsys, FLOW, "flow", "--json", "--plot", "/dev/full")
    one_line(code, err, "--plot: cannot write the figure to /dev/full")
    ref = flow(Params(**PARAMS), Gaussian(**INITIAL), 1.0)
    np.testing.assert_allclose(json.loads(out)["cov"], ref.cov, rtol=1e-14)


@pytest.mark.parametrize("argv, needle", [
    (["prescribed", "--n-tokens", "0"], "n_tokens must be ≥ 2"),
    (["prescribed", "--n-tokens", "1e3"], "argument --n-tokens: must be an integer"),
    (["relu-drift", "--n-tokens", str(10 ** 12)], "experiments.MAX_TOKENS"),
    (["relu-drift", "--seed", str(2 ** 70)], "validation.MAX_SEED"),
    (["probe", "--n-null", "0"], "n_null must be ≥ 1"),
    (["probe", "--n-null", str(10 ** 9)], "gaussianity.MAX_NULL"),
    (["probe", "--n-tokens", str(10 ** 12)], "probe.MAX_TOKENS"),
    (["probe", "--seed", "-1"], "seed must be ≥ 0"),
    (["flow"], "required: spec"),
    (["flwo", "x"], "invalid choice"),
])
def test_argument_errors_are_one_line(tmp_path, capsys, argv, needle):
    try:
        code = main([*argv, "--out", str(tmp_path / "out")] if argv[0] in
                    ("prescribed", "relu-drift", "probe") else argv)
    except SystemExit as exc:
        code = exc.code
    one_line(code, capsys.readouterr().err, needle)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["prescribed", "relu-drift", "probe"])
def test_out_below_a_file_is_refused_before_computing(tmp_path, capsys, command):
    (tmp_path / "taken").write_text("the user's file")
    code = main([command, "--n-tokens", "300", "--out", str(tmp_path / "taken" / "sub")])
    one_line(code, capsys.readouterr().err, "is not a folder")
    assert (tmp_path / "taken").read_text() == "the user's file"


@pytest.mark.parametrize("extra, read", [(["--json"], 10), ([], 0)])
def test_closed_stdout_ends_quietly(tmp_path, extra, read):
    """`riccati-tf flow spec --json | head -c 10`: exit 0, nothing on stderr (read = 0: the
    reader is gone before anything was written)."""
    spec = {**FLOW, "t_eval": np.linspace(0.0, 1.0, 5001).tolist(), "method": "rk"}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    proc = subprocess.Popen([sys.executable, "-m", "riccati_tf.app.cli", "flow", str(path), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if read:
        assert proc.stdout.read(read)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 0 and err == ""


@pytest.mark.parametrize("redirect, code", [(">&-", 0), ("2>&-", 2), (">&- 2>&-", 0)])
def test_closed_stdout_or_stderr_at_start(tmp_path, redirect, code):
    """Started with fd 1 or 2 closed, Python has sys.stdout / sys.stderr = None: no crash, and
    an error message never lands on stdout."""
    spec = {**FLOW, "metod": "rk"} if code == 2 else FLOW
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    proc = subprocess.run(["sh", "-c", f'"$0" -m riccati_tf.app.cli flow "$1" {redirect}',
                           sys.executable, str(path)], capture_output=True, timeout=60)
    assert proc.returncode == code
    assert b"error" not in proc.stdout


# --- what users see: summaries, the steering plan, help, progress ----------------------------

def test_flow_summary_is_a_table_of_the_final_state(tmp_path, capsys):
    spec = {"params": PARAMS, "initial": INITIAL, "t_final": 5.0}
    code, out, _ = run(tmp_path, capsys, spec, "flow")
    assert code == 0 and "..." not in out
    ref = flow(Params(**PARAMS), Gaussian(**INITIAL), 5.0)
    rows = {line.split("  ")[0]: line for line in out.splitlines()}
    assert rows["status"].split()[-1] == "completed" and rows["method"].split()[-1] == "exact"
    end = rows["Σ eigenvalues"].split("]")[1]
    got = [float(x) for x in end.strip(" [").split(",")]
    np.testing.assert_allclose(got, np.linalg.eigvalsh(ref.cov[-1])[::-1], rtol=1e-5)
    assert rows["rank Σ"].split() == ["rank", "Σ", "2", "2"]


def test_certify_summary_speaks_unicode_and_plain_names(tmp_path, capsys):
    spec = {"params": SCALAR, "initial": INITIAL}
    code, out, _ = run(tmp_path, capsys, spec, "certify")
    assert code == 0
    assert "\\u" not in out and "global_" not in out and "⪰" in out
    for label in ("regime", "exact", "global", "theorem", "tolerance", "T*", "rate",
                  "residuals", "check()"):
        assert any(line.startswith(label + " ") for line in out.splitlines()), label
    assert "passed" in out
    code, out, _ = run(tmp_path, capsys, spec, "certify", "--json")
    got = json.loads(out)
    assert "⪰" in got["reason"] and got["global"] is True and "global_" not in got


def test_derive_prints_the_latex_whole_with_single_backslashes(tmp_path, capsys):
    from riccati_tf.symbolic import transformer_system
    from riccati_tf.symbolic.latex import system_latex

    code, out, _ = run(tmp_path, capsys, {"d": 2, "ffn": "relu"}, "derive")
    assert code == 0
    latex = out.split("LaTeX:\n", 1)[1].strip()
    want = system_latex(transformer_system(2, ffn="relu"))
    assert latex.replace("\n", " ") == want and "\\\\Sigma" not in latex
    assert latex.endswith("\\end{aligned}")


def test_equilibria_summary_has_one_row_per_equilibrium(tmp_path, capsys):
    code, out, _ = run(tmp_path, capsys, VALID["equilibria"], "equilibria")
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[1].split()[:4] == ["#", "stable", "rank", "abscissa"]
    assert [ln.split()[1] for ln in lines[2:]] == ["no", "yes"]


def test_which_all_with_a_repeated_eigenvalue_is_exit_2_with_advice(tmp_path, capsys):
    spec = {"params": {**PARAMS, "b": [0, 0]}, "which": "all"}
    code, _, err = run(tmp_path, capsys, spec, "equilibria")
    one_line(code, err, "use which: stable")
    assert "repeated eigenvalue 0.5" in err
    code, out, _ = run(tmp_path, capsys, {**spec, "which": "stable"}, "equilibria", "--json")
    assert code == 0 and len(json.loads(out)["equilibria"]) == 1


@pytest.mark.parametrize("controls", ["affine", "attention", "values"])
def test_steer_plan_is_replayed_by_flow(tmp_path, capsys, controls):
    """steer --json → its field plan as a spec → flow --json ends at the target within the
    plan's tolerance (relative errors computed here)."""
    spec = {"start": INITIAL, "target": TARGET, "T": 1.0, "controls": controls}
    code, out, err = run(tmp_path, capsys, spec, "steer", "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["success"] is True and plan["controls"] == controls
    assert plan["plan"]["schedule"][0]["t_start"] == 0.0
    code, out, err = run(tmp_path, capsys, plan["plan"], "flow", "--json", name="plan.json")
    assert code == 0, err
    got = json.loads(out)
    assert got["t"][-1] == plan["plan"]["t_final"]
    mean, cov = np.array(got["mean"][-1]), np.array(got["cov"][-1])
    tol = plan["tolerance"]
    assert np.linalg.norm(mean - TARGET["mean"]) <= tol * np.linalg.norm(TARGET["mean"])
    assert np.linalg.norm(cov - TARGET["cov"]) <= tol * np.linalg.norm(TARGET["cov"])


def test_schedule_of_one_piece_equals_constant_params(tmp_path, capsys):
    spec = {"initial": INITIAL, "t_final": 2.0, "t_eval": [0.0, 0.5, 2.0],
            "schedule": [{"t_end": 2.0, "params": PARAMS}]}
    code, out, _ = run(tmp_path, capsys, spec, "flow", "--json")
    assert code == 0
    ref = flow(Params(**PARAMS), Gaussian(**INITIAL), 2.0, t_eval=[0.0, 0.5, 2.0])
    np.testing.assert_allclose(json.loads(out)["cov"], ref.cov, rtol=1e-14)


PIECE = {"t_end": 1.0, "params": PARAMS}


@pytest.mark.parametrize("spec, needle", [
    ({**FLOW, "schedule": [PIECE]}, "schedule: give either params"),
    ({"initial": INITIAL, "t_final": 1.0, "schedule": []}, "schedule: must be a non-empty"),
    ({"initial": INITIAL, "t_final": 1.0, "schedule": [{"t_end": 0.5, "params": PARAMS}]},
     "schedule[0].t_end: the last piece must end at t_final"),
    ({"initial": INITIAL, "t_final": 1.0, "schedule": [{"t_end": 0.5, "params": PARAMS},
                                                        {"t_end": 0.5, "params": PARAMS}]},
     "schedule[1].t_end: must be > 0.5"),
    ({"initial": INITIAL, "t_final": 1.0, "schedule": [{**PIECE, "t_start": 0.1}]},
     "schedule[0].t_start: must equal"),
    ({"initial": INITIAL, "t_final": 1.0, "schedule": [{"t_end": 1.0}]},
     "schedule[0]: give exactly one of params"),
    ({"initial": INITIAL, "t_final": 1.0, "schedule": [{**PIECE, "parms": 1}]},
     "schedule[0].parms: unknown field"),
    ({"initial": INITIAL, "t_final": 1.0, "schedule": [{"t_end": 1.0, "params": {"A": [[1]]}}]},
     "schedule[0].params: acts on R^1"),
    ({"initial": INITIAL, "t_final": 1.0, "schedule": [{"t_end": 1.0, "tracking": {
        "K": np.eye(2).tolist(), "A": np.eye(2).tolist(), "V": np.eye(2).tolist(),
        "R": np.eye(2).tolist(), "L_start": [[1, 0, 0], [0, 1, 0]], "m_start": [0, 0],
        "b_path": [0, 0]}}]}, "schedule[0].tracking.L_start: must be 2 × r (≤ 2)"),
    ({"initial": INITIAL, "t_final": 1.0, "method": "exact", "schedule": [{
        "t_end": 1.0, "tracking": {"K": np.eye(2).tolist(), "A": np.eye(2).tolist(),
                                   "V": np.eye(2).tolist(), "R": np.eye(2).tolist(),
                                   "L_start": np.eye(2).tolist(), "m_start": [0, 0],
                                   "b_path": [0, 0]}}]}, "method: exact needs constant"),
    ({"initial": INITIAL, "t_final": 1.0}, "params: missing field"),
])
def test_schedule_is_validated_strictly(tmp_path, capsys, spec, needle):
    code, _, err = run(tmp_path, capsys, spec, "flow")
    one_line(code, err, needle)


def test_help_lists_only_what_a_subcommand_supports(capsys):
    from riccati_tf.app.cli import build_parser

    parser = build_parser()
    sub = parser._subparsers._group_actions[0].choices
    for name, has_plot in (("derive", False), ("equilibria", False), ("flow", True),
                           ("steer", True), ("certify", True)):
        assert ("--plot" in sub[name].format_help()) == has_plot, name
    probe = " ".join(sub["probe"].format_help().split())  # argparse wraps at the width
    from riccati_tf.empirical.probe import DEFAULT_TOKENS

    assert f"default {DEFAULT_TOKENS}" in probe and "probe.MAX_TOKENS = 8192" in probe
    atlas = sub["atlas"].format_help()
    assert "--position-free" in atlas and "--horizon" in atlas and "--model" in atlas
    assert "gaussianity.MAX_NULL" in probe
    steer_help = sub["steer"].format_help()
    for controls in ("affine", "attention", "values-nobias", "full"):
        assert f"  {controls} " in steer_help
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    from importlib.metadata import version

    assert capsys.readouterr().out.strip() == f"riccati-tf {version('riccati-tf')}"


def test_particles_compare_with_the_drawn_tokens_moments(tmp_path, capsys):
    code, out, _ = run(tmp_path, capsys, VALID["particles"], "particles", "--json")
    assert code == 0
    got = json.loads(out)
    assert got["cov_rel_error"][0] <= 1e-12  # the same Gaussian at t = 0
    x0 = Gaussian(**INITIAL).sample(400, np.random.default_rng(1))
    np.testing.assert_allclose(got["reference_cov"], np.cov(x0.T), rtol=1e-13)
    code, out, _ = run(tmp_path, capsys, VALID["particles"], "particles")
    assert "empirical moments" in out and "‖ΔΣ‖/‖Σ‖" in out


def test_particles_in_chunks_equal_one_run(monkeypatch):
    """The progress bar's chunks give the steps of one run."""
    import riccati_tf.app.cli.particles as cli  # where the particles subcommand lives
    from riccati_tf.empirical.particles import simulate

    x0 = Gaussian(**INITIAL).sample(60, np.random.default_rng(3))
    p = Params(**GENERAL)
    one = simulate(p, x0, 0.3, n_steps=7)
    monkeypatch.setattr(cli, "PROGRESS_CHUNKS", 3)
    chunked = cli.simulate_with_progress(p, x0, 0.3, n_steps=7, method="rk4", work=10 ** 9)
    np.testing.assert_allclose(chunked.t, one.t, rtol=1e-15)
    np.testing.assert_allclose(chunked.cov, one.cov, rtol=1e-12)
    np.testing.assert_allclose(chunked.mean, one.mean, rtol=1e-12, atol=1e-15)


class _Terminal:
    def __init__(self, tty):
        self.tty, self.text = tty, []

    def isatty(self):
        return self.tty

    def write(self, s):
        self.text.append(s)

    def flush(self):
        pass


@pytest.mark.parametrize("tty", [True, False])
def test_progress_bars_only_on_a_terminal(monkeypatch, tty):
    from riccati_tf.app.experiments import progress_bar

    term = _Terminal(tty)
    monkeypatch.setattr(sys, "stderr", term)
    with progress_bar(3, "work") as bar:
        bar.update(3)
    assert bool("".join(term.text)) == tty
    monkeypatch.setattr(sys, "stderr", None)
    with progress_bar(3, "closed") as bar:  # stderr closed: no bar, no error
        bar.update(3)


def test_console_entry_keeps_exit_codes_and_output():
    """`riccati-tf` goes through cli.entry (which ends the process without the interpreter's
    teardown once pyarrow is loaded): --version prints and exits 0, a usage error exits 2 with
    argparse's message, a sweep writes its table and exits 0."""
    run = [sys.executable, "-c", "import sys; from riccati_tf.app.cli import entry; "
                                 "sys.argv[0] = 'riccati-tf'; entry()"]
    got = subprocess.run([*run, "--version"], capture_output=True, text=True, timeout=120)
    assert got.returncode == 0 and got.stdout.startswith("riccati-tf ")
    got = subprocess.run([*run, "no-such-command"], capture_output=True, text=True, timeout=120)
    assert got.returncode == 2 and "invalid choice" in got.stderr


def test_console_entry_after_a_sweep_exits_cleanly(tmp_path):
    pytest.importorskip("pyarrow")
    spec = {"analysis": "certify", "family": {"grid": {"v": {"linspace": [-1.0, 1.0, 4]}}},
            "params": {"A": [[-1.0, 0.0], [0.0, -0.5]], "B": [[1.0, 0.0], [0.0, 1.0]],
                       "V": {"v": [[1, 0], [0, 1]]}},
            "initial": {"cov": [[1.0, 0.0], [0.0, 1.0]]}}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    run = [sys.executable, "-c", "import sys; from riccati_tf.app.cli import entry; entry()",
           "sweep", str(tmp_path / "spec.json"), "--out", str(tmp_path / "out")]
    got = subprocess.run(run, capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stderr
    assert (tmp_path / "out" / "manifest.json").exists()
    assert "collapses 3" in got.stdout  # the summary, flushed before the process ends


@pytest.mark.parametrize("code", [
    "import riccati_tf",
    "from riccati_tf.app.cli import main; main(['--help'])",
    "from riccati_tf.app.cli import main; main(['atlas', '--help'])",
])
def test_help_and_import_load_no_solver_library(code):
    # `riccati-tf --help` is the first thing a newcomer runs: it must not wait for SciPy,
    # SymPy, python-control, matplotlib or torch (the solvers load on first use)
    probe = (f"import sys\ntry:\n    {code}\nexcept SystemExit:\n    pass\n"
             "heavy = ('scipy', 'sympy', 'control', 'matplotlib', 'torch', 'pyarrow', 'dask')\n"
             "print(sorted(m for m in heavy if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True)
    assert run.stdout.strip().splitlines()[-1] == "[]"


def test_lazy_names_are_the_modules_objects():
    import riccati_tf
    from riccati_tf.flows.integrate import flow as flow_function
    from riccati_tf.stability.certificates import certify

    assert riccati_tf.flow is flow_function and riccati_tf.certify is certify
    assert set(riccati_tf.__all__) <= set(dir(riccati_tf))
    assert riccati_tf.stability.riccati.bernoulli is riccati_tf.stability.bernoulli
    with pytest.raises(AttributeError, match="no attribute 'flows_'"):
        riccati_tf.flows_  # noqa: B018


def test_json_errors_are_json_and_debug_is_accepted_before_the_subcommand(tmp_path, capsys):
    bad = {"params": PARAMS, "initial": {"mean": [0.0, 0.0], "cov": [[1.0, 0.0], [0.0, -1.0]]}}
    code, out, err = run(tmp_path, capsys, bad, "certify", "--json")
    assert code == 2 and out == ""
    got = json.loads(err)  # one line: a JSON object like the results
    assert got["command"] == "certify" and got["kind"] == "error"
    assert "positive semidefinite" in got["message"]
    code, _, err = run(tmp_path, capsys, bad, "certify")
    assert code == 2 and err.startswith("riccati-tf certify: error: ")
    path = tmp_path / "spec.json"
    for argv in (["--debug", "certify", str(path)], ["certify", str(path), "--debug"]):
        with pytest.raises(Exception, match="positive semidefinite"):  # the traceback's error
            main(argv)


def test_each_subcommand_writes_to_its_own_default_folder():
    """A default run never overwrites another command's results: every --out folder defaults to
    its own name (only `report` writes report/), all different."""
    from riccati_tf.app.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    defaults = {name: action.default for name, p in sub.choices.items()
                for action in p._actions if "--out" in action.option_strings
                and action.default is not None}
    assert {"report", "prescribed", "relu-drift", "probe", "atlas", "compare",
            "design"} <= set(defaults)
    assert defaults["report"] == "report"
    assert all(folder == name for name, folder in defaults.items())


@pytest.mark.parametrize("package", ["riccati_tf", "riccati_tf.sweep"])
def test_dir_shows_the_public_names_only(package):
    import importlib

    names = dir(importlib.import_module(package))
    assert not {"TYPE_CHECKING", "attach", "lazy"} & set(names)
    assert set(importlib.import_module(package).__all__) <= set(names)


def test_params_without_a_as_in_python(tmp_path, capsys):
    """`Params(B=..., V=...)` leaves A = 0; a spec may too, and means the same layer."""
    layer = {"B": [[1.0, 0.2], [0.2, 0.6]], "V": [[-1.0, 0.0], [0.0, -1.0]]}
    spec = {"params": layer, "initial": {"mean": [1.0, 0.0], "cov": [[1.0, 0.3], [0.3, 0.5]]}}
    code, out, err = run(tmp_path, capsys, spec, "certify", "--json")
    assert code == 0, err
    want = certify(Params(**layer), Gaussian(**spec["initial"]))
    got = json.loads(out)
    assert (got["regime"], got["theorem"]) == (want.regime, want.theorem)
    code, _, err = run(tmp_path, capsys, {**spec, "params": {}}, "certify")
    assert code == 2 and "nothing else gives the dimension d" in err


def test_certify_of_a_small_layer_does_not_import_python_control():
    """The first certify of a 2×2 layer loads SciPy, SLICOT and SymPy (exact premises), not
    python-control (seconds of import: its Lyapunov solver, SLICOT sb03md, is called directly),
    torch, dask or pyarrow; `Certificate.linearization` is the one place that needs it."""
    probe = ("import sys\nimport numpy as np\nimport riccati_tf as rt\n"
             "c = rt.certify(rt.Params(A=0.5 * np.eye(2), B=np.eye(2), V=-np.eye(2)),"
             " [[1.0, 0.3], [0.3, 0.5]])\n"
             "print(c.regime, c.exact, sorted(m for m in ('control', 'torch', 'dask', 'pyarrow')"
             " if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True)
    assert run.stdout.split() == ["converges", "True", "[]"]


@pytest.mark.parametrize("command", ["probe", "atlas", "compare"])
def test_missing_model_extra_is_named_once_and_quoted(command, tmp_path):
    """On the core install (torch and transformers unimportable, in a fresh process) the model
    subcommands end with one line that names the extra once, quoted for every shell."""
    probe = ("import sys\nclass Block:\n    def find_spec(self, name, path=None, target=None):\n"
             "        if name.split('.')[0] in ('torch', 'transformers'):\n"
             "            raise ImportError(f'No module named {name!r}')\n"
             "sys.meta_path.insert(0, Block())\nfrom riccati_tf.app.cli import main\n"
             f"sys.exit(main([{command!r}, '--out', {str(tmp_path / 'o')!r}]))")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert run.stderr.count("pip install") == 1
    assert "pip install 'riccati-tf[models]'" in run.stderr
