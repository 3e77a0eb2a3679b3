"""Nothing the user names is unpickled: a scan of the package's source for every call that can
unpickle (numpy with allow_pickle=True, pickle/marshal/shelve/dill/joblib loads, torch.load
without weights_only=True, YAML's unsafe loaders, transformers' remote code), and crafted
payloads — files whose unpickling would create a marker folder — refused by every option that
reads arrays before anything runs (the marker never appears)."""

import ast
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from riccati_tf.app.cli import main
from riccati_tf.empirical.encoders.inputfiles import (
    check_input_files,
    read_hidden,
    read_token_ids,
)
from riccati_tf.errors import InvalidInputError
from riccati_tf.io.arrays import read_arrays, read_headers

PACKAGE = Path(__file__).resolve().parents[1] / "riccati_tf"

#: calls that unpickle whatever they are given (module, function)
UNPICKLING = {("pickle", "load"), ("pickle", "loads"), ("pickle", "Unpickler"),
              ("_pickle", "load"), ("_pickle", "loads"), ("marshal", "load"),
              ("marshal", "loads"), ("shelve", "open"), ("dill", "load"), ("dill", "loads"),
              ("joblib", "load"), ("cloudpickle", "load"), ("cloudpickle", "loads"),
              ("pandas", "read_pickle"), ("pd", "read_pickle"), ("yaml", "unsafe_load"),
              ("yaml", "full_load"), ("yaml", "load_all"), ("yaml", "unsafe_load_all")}
#: YAML loaders that construct arbitrary Python objects
UNSAFE_YAML = ("Loader", "UnsafeLoader", "FullLoader", "CLoader", "CUnsafeLoader",
               "CFullLoader")


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def _keyword(call: ast.Call, name: str):
    """The literal value of keyword `name` of the call (missing: the string "absent")."""
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value.value if isinstance(kw.value, ast.Constant) else "not a literal"
    return "absent"


def unpickling_calls(source: str) -> list[str]:
    """Every call in `source` that can unpickle, as "line: reason" ('from m import f' aliases
    resolved)."""
    tree = ast.parse(source)
    aliases = {}  # local name → (module, function)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                aliases[a.asname or a.name] = (node.module.split(".")[0], a.name)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        module, _, function = name.rpartition(".")
        module, function = aliases.get(name, (module.split(".")[-1], function))
        where = f"line {node.lineno}: {name}"
        if (module, function) in UNPICKLING:
            found.append(f"{where} unpickles")
        loader = next((kw.value for kw in node.keywords if kw.arg == "Loader"), None)
        if (module, function) == ("yaml", "load") and (
                loader is None or _dotted(loader).rpartition(".")[2] in UNSAFE_YAML):
            found.append(f"{where} without a safe Loader")
        if function == "load" and module in ("torch",) and _keyword(node,
                                                                     "weights_only") is not True:
            found.append(f"{where} without weights_only=True")
        if _keyword(node, "allow_pickle") is True or _keyword(node, "allow_pickle") == \
                "not a literal":
            found.append(f"{where} with allow_pickle not False")
        if function in ("load", "loadtxt", "genfromtxt") and module in ("np", "numpy"):
            found.append(f"{where}: read arrays through riccati_tf.io.arrays")
        if _keyword(node, "weights_only") is False or _keyword(node, "trust_remote_code") \
                not in ("absent", False):
            found.append(f"{where} runs code from the file")
    return found


@pytest.mark.parametrize("snippet, caught", [
    ("import numpy as np\nnp.load(p, allow_pickle=True)", True),
    ("import numpy\nnumpy.load(p)", True),
    ("import pickle\npickle.loads(b)", True),
    ("from pickle import loads as l\nl(b)", True),
    ("import torch\ntorch.load(p)", True),
    ("import torch\ntorch.load(p, weights_only=False)", True),
    ("import torch\ntorch.load(p, weights_only=True)", False),
    ("import yaml\nyaml.load(s)", True),
    ("import yaml\nyaml.load(s, Loader=yaml.FullLoader)", True),
    ("import yaml\nyaml.load(s, Loader=spec_loader)", False),  # checked below
    ("AutoModel.from_pretrained(p, trust_remote_code=True)", True),
    ("AutoModel.from_pretrained(p, local_files_only=True)", False),
    ("f(x, allow_pickle=flag)", True),
    ("import pickle\npickle.dumps(x)", False),
    ("from numpy.lib import format\nformat.read_array(fh, allow_pickle=False)", False),
])
def test_the_scan_catches_what_unpickles(snippet, caught):
    assert bool(unpickling_calls(snippet)) == caught, unpickling_calls(snippet)


def test_no_call_in_the_package_unpickles():
    found = {str(path.relative_to(PACKAGE)): calls for path in sorted(PACKAGE.rglob("*.py"))
             if (calls := unpickling_calls(path.read_text(encoding="utf-8")))}
    assert not found, found


def test_the_spec_files_yaml_loader_is_safe():
    # the one yaml.load of the package (io.spec) takes this loader: safe constructors only
    yaml = pytest.importorskip("yaml")
    from riccati_tf.io.spec import _yaml_loader

    loader = _yaml_loader()
    assert issubclass(loader, yaml.constructor.SafeConstructor)
    assert not issubclass(loader, yaml.constructor.FullConstructor)
    with pytest.raises(yaml.constructor.ConstructorError):
        yaml.load("!!python/object/apply:os.mkdir ['x']", Loader=loader)


def test_no_text_in_the_package_shows_allow_pickle_true():
    # nor in docstrings and examples: no example teaches reading a pickle
    shown = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
             if "allow_pickle=True" in p.read_text(encoding="utf-8")]
    assert not shown, shown


# ---------------------------------------------------------------------------------------------
# crafted payloads


class _Payload:
    """Unpickling it creates the folder `marker` (os.mkdir): any code could run instead."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return os.mkdir, (self.marker,)


def _payloads(tmp_path) -> dict[str, Path]:
    """{name: path} of files that create tmp_path/"ran" when unpickled."""
    marker = tmp_path / "ran"
    objects = np.empty(2, dtype=object)
    objects[0], objects[1] = _Payload(marker), np.array([1, 2])
    out = {"object .npy": tmp_path / "ids.npy", "object .npz": tmp_path / "ids.npz",
           "object beside ids": tmp_path / "mixed.npz", "pickle": tmp_path / "ids.pkl",
           "pickle named .npy": tmp_path / "p.npy"}
    np.save(out["object .npy"], objects)
    np.savez(out["object .npz"], ids=objects)
    np.savez(out["object beside ids"], a=np.array([1, 2, 3]), b=objects)
    out["pickle"].write_bytes(pickle.dumps(_Payload(marker)))
    out["pickle named .npy"].write_bytes(pickle.dumps(_Payload(marker)))
    return out


def test_the_payloads_are_live(tmp_path):
    # what the old reader did (np.load with allow_pickle=True) runs the payload: the marker
    # appears, so the tests below, which see no marker, could fail
    path = _payloads(tmp_path)["object .npy"]
    np.load(path, allow_pickle=True)
    assert (tmp_path / "ran").is_dir()


@pytest.mark.parametrize("payload", ["object .npy", "object .npz", "object beside ids",
                                     "pickle", "pickle named .npy"])
@pytest.mark.parametrize("command", ["probe", "atlas", "compare"])
@pytest.mark.parametrize("option", ["--tokens", "--hidden"])
def test_the_command_line_refuses_a_payload_before_it_runs(payload, command, option, tmp_path,
                                                           capsys):
    path = _payloads(tmp_path)[payload]
    code = main([command, "--model", str(tmp_path / "model"), option, str(path),
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and option in err[0], err
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("reader", [read_token_ids, read_hidden,
                                    lambda p: check_input_files(tokens=p),
                                    lambda p: check_input_files(hidden=p),
                                    lambda p: read_arrays(p, "x", "arrays"),
                                    lambda p: read_headers(p, "x", "arrays")])
def test_the_readers_refuse_every_payload(reader, tmp_path):
    for path in _payloads(tmp_path).values():
        with pytest.raises(InvalidInputError, match=r"objects|pickle|\.npy file"):
            reader(path)
    assert not (tmp_path / "ran").exists()


def test_a_payload_in_a_model_input_is_refused_by_the_library(tmp_path):
    pytest.importorskip("transformers")
    from riccati_tf.empirical.encoders.loading import model_inputs
    from riccati_tf.empirical.encoders.tiny import tiny_encoder

    model = tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=1)
    for path in _payloads(tmp_path).values():
        for option in ("tokens", "hidden"):
            with pytest.raises(InvalidInputError, match=f"--{option}"):
                model_inputs(model, **{option: path})
    assert not (tmp_path / "ran").exists()
