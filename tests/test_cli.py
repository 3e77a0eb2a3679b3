"""The command line: valid specs give results, invalid specs one line naming the field, exit 2."""

import json
import subprocess
import sys

import numpy as np
import pytest

from riccati_tf import Gaussian, Params, flow
from riccati_tf.cli import main

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
    out = subprocess.run([sys.executable, "-m", "riccati_tf.cli", "--help"], capture_output=True,
                         text=True, check=True).stdout
    for command in ("flow", "layers", "report"):
        assert command in out


def test_probe_on_a_locally_saved_tiny_model(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from riccati_tf.models import tiny_model

    model_dir = tmp_path / "tiny-deit"
    tiny_model("deit", hidden_size=32, n_layers=2, n_heads=2).save_pretrained(model_dir)
    out = tmp_path / "out"
    code = main(["probe", "--model", str(model_dir), "--out", str(out), "--n-tokens", "300",
                 "--n-null", "40"])
    printed = capsys.readouterr().out
    assert code == 0
    assert (out / "probe.png").read_bytes()[:4] == b"\x89PNG"
    numbers = json.loads((out / "probe.json").read_text())
    assert numbers["model_path"] == str(model_dir)
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
    "steer": {"start": INITIAL, "target": TARGET, "T": 1.0},
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
    ("steer", {"start": INITIAL, "target": TARGET}, "T: missing field"),
    ("particles", {"params": GENERAL, "initial": INITIAL, "n_tokens": 1, "t_final": 0.2,
                   "n_steps": 2}, "n_tokens must be ≥ 2"),
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
    import riccati_tf.flows as flows
    from riccati_tf.errors import SolverError

    def fail(*_args, **_kwargs):
        raise SolverError("the Runge–Kutta integration failed at t = 0.5")

    monkeypatch.setattr(flows, "flow", fail)
    spec = {"params": PARAMS, "initial": INITIAL, "t_final": 1.0}
    code, _, err = run(tmp_path, capsys, spec, "flow")
    assert code == 3 and "numerical failure" in err


@pytest.mark.parametrize("command", ["prescribed", "relu-drift"])
def test_experiment_subcommands(tmp_path, capsys, command):
    code = main([command, "--n-tokens", "200", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    name = command.replace("-", "_")
    assert (tmp_path / f"{name}.png").exists()
    assert json.loads((tmp_path / f"{name}.json").read_text())["n_tokens"] == 200
    assert out.strip().startswith("{")


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
