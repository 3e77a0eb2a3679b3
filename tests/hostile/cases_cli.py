"""Hostile command lines (area "cli"): spec files that are not UTF-8, empty, a list, binary
garbage, nested without end, YAML alias bombs, JSON NaN literals, duplicate keys, numbers beyond
the float range, YAML 1.1 numbers read as YAML 1.2 does; misspelled keys at every level of every
subcommand's spec; strings, booleans and null where numbers belong; counts that would exhaust
memory or time; --plot and --out onto folders, files and devices that cannot take them; a reader
that closes the pipe.

A refusal must exit 2 (or 3 for a numerical failure) with ONE line on stderr that names the field,
the option, the limit or the path (checked here before the case reports a clean error). A result
(exit 0) must equal the library called directly: `flow --json` equals `riccati_tf.flow` to 1e-14,
and so on. Every case runs the CLI in this process on a tiny problem (d = 1–2, few tokens) except
the broken-pipe cases, which need a real process with a real pipe.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from riccati_tf import Gaussian, Params, certify, equilibria, flow, layers, steer

from . import CleanError, case, cases_of
from ._cli import LeakedError, run_cli

AREA = "cli"

PARAMS = {"A": [[-0.5, 0.2], [0.0, -0.3]], "B": [[1.0, 0.2], [0.2, 0.6]], "V": [[-1, 0], [0, -1]]}
GENERAL = {"A": [[-0.3, 0.2], [0.0, -0.2]], "B": [[0.5, 0.1], [0.0, 0.3]],
           "V": [[0.4, 0.1], [-0.2, 0.3]]}
INITIAL = {"mean": [1.0, 0.0], "cov": [[1.0, 0.3], [0.3, 0.5]]}
TARGET = {"mean": [-1.0, 2.0], "cov": [[2.0, -0.4], [-0.4, 0.7]]}
SPECS = {
    "flow": {"params": PARAMS, "initial": INITIAL, "t_final": 1.0, "t_eval": [0.0, 0.5, 1.0]},
    "layers": {"params": PARAMS, "initial": INITIAL, "n_layers": 3, "tau": 0.1},
    "derive": {"d": 2, "heads": 1},
    "equilibria": {"params": PARAMS, "which": "stable"},
    "certify": {"params": PARAMS, "initial": INITIAL},
    "steer": {"start": INITIAL, "target": TARGET, "T": 1.0},
    "particles": {"params": GENERAL, "initial": INITIAL, "n_tokens": 50, "t_final": 0.1,
                  "n_steps": 2, "seed": 1},
}
FLOW_YAML = ("params: {A: [[-0.5, 0.2], [0.0, -0.3]], B: [[1.0, 0.2], [0.2, 0.6]], "
             "V: [[-1, 0], [0, -1]]}\ninitial: {mean: [1.0, 0.0], cov: [[1.0, 0.3], [0.3, 0.5]]}\n")


def spec_of(command: str, **changes) -> dict:
    """A deep copy of the valid spec of `command` with top-level fields changed (None deletes)."""
    spec = json.loads(json.dumps(SPECS[command]))
    for key, value in changes.items():
        if value is None:
            spec.pop(key, None)
        else:
            spec[key] = value
    return spec


def with_path(spec: dict, path: str, value) -> dict:
    """`spec` with the value at a dotted path (e.g. "initial.cov") replaced."""
    spec = json.loads(json.dumps(spec))
    *head, last = path.split(".")
    node = spec
    for key in head:
        node = node[int(key)] if isinstance(node, list) else node[key]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return spec


def run(command: str, spec=None, *args: str, text: str | bytes | None = None,
        suffix: str = ".json", setup=None, spec_path: str | None = None):
    """(exit code, stdout, stderr) of `riccati-tf command FILE args` in this process; the spec
    is `spec` as JSON, or `text` (str or bytes) as is; "{tmp}" in args is the temporary folder;
    setup(tmp) prepares files first; spec_path replaces the spec file by another path."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"spec{suffix}"
        if isinstance(text, bytes):
            path.write_bytes(text)
        elif text is not None:
            path.write_text(text, encoding="utf-8")
        elif spec is not None:
            path.write_text(json.dumps(spec))
        if setup is not None:
            setup(Path(tmp))
        target = spec_path.replace("{tmp}", tmp) if spec_path else str(path)
        argv = [command, *([target] if spec is not None or text is not None or spec_path
                           else []), *(a.replace("{tmp}", tmp) for a in args)]
        return run_cli(argv)


def clean(code: int, out: str, err: str, needle: str | tuple[str, ...], *,
          exit_code: int = 2) -> None:
    """Raise CleanError when the CLI refused with exit `exit_code` and one stderr line naming
    every needle; AssertionError when it accepted the input or named the wrong thing;
    LeakedError on exit 1 or a multi-line message."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if code == 0:
        raise AssertionError(f"the input was accepted (exit 0): {out[:200]!r}")
    if code not in (2, 3) or len(lines) != 1:
        raise LeakedError(f"exit {code} with {len(lines)} stderr lines: {err[:300]!r}")
    assert code == exit_code, f"exit {code}, wanted {exit_code}: {lines[0]}"
    assert "Traceback" not in err and "unexpected error" not in err, lines[0]
    for n in (needle,) if isinstance(needle, str) else needle:
        assert n in lines[0], f"the refusal {lines[0]!r} does not name {n!r}"
    raise CleanError(lines[0])


def refused(needle, command: str, spec=None, *args: str, exit_code: int = 2, **kw) -> None:
    clean(*run(command, spec, *args, **kw), needle, exit_code=exit_code)


def accepted(command: str, spec=None, *args: str, **kw) -> str:
    code, out, err = run(command, spec, *args, **kw)
    if code != 0:
        raise LeakedError(f"exit {code}: {err.strip()[:300]}") if code not in (2, 3) else \
            AssertionError(f"a valid input was refused (exit {code}): {err.strip()[:300]}")
    return out


def close(got, want, tol: float = 1e-14, what: str = "") -> None:
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    scale = max(float(np.max(np.abs(want))) if want.size else 0.0, 1e-300)
    err = float(np.max(np.abs(got - want))) / scale if want.size else 0.0
    assert err <= tol, f"{what}: relative difference {err:.3g} > {tol:g}"


def check_flow_json(out: str, spec: dict) -> None:
    """stdout of `flow --json` against riccati_tf.flow on the same spec."""
    got = json.loads(out)
    p = spec["params"]
    params = Params(A=p["A"], B=p.get("B"), V=p.get("V"), b=p.get("b"),
                    heads=[(h["V"], h["B"]) for h in p["heads"]] if "heads" in p else None)
    g0 = Gaussian(**spec["initial"])
    kw = {k: spec[k] for k in ("rtol", "atol", "method", "t_eval") if k in spec}
    ref = flow(params, g0, spec["t_final"], **kw)
    for key in ("t", "mean", "cov"):
        close(got[key], getattr(ref, key), what=f"flow {key}")
    assert got["status"] == ref.status and got["method"] == ref.method


# ------------------------------------------------------------------- reading the spec file

cases_of(AREA, "error", {
    "YAML 1e400 in a matrix is beyond the float range": (
        "params.A[0][0]", "flow", None, "text",
        "params: {A: [[1e400]]}\ninitial: {mean: [0], cov: [[1]]}\nt_final: 1\n", ".yaml"),
    "JSON integer 10**400 in a matrix": (
        "params.A[0][1]", "flow", None, "text",
        '{"params": {"A": [[1, 1' + "0" * 400 + ']]}, "initial": {"mean": [0, 0], '
        '"cov": [[1, 0], [0, 1]]}, "t_final": 1}', ".json"),
    "JSON float 1e400 in a covariance": (
        "initial.cov[1][1]", "certify", None, "text",
        '{"params": {"A": [[-1, 0], [0, -1]]}, "initial": {"mean": [0, 0], '
        '"cov": [[1, 0], [0, 1e400]]}}', ".json"),
    "JSON integer 10**400 as tau": (
        "tau", "layers", None, "text",
        json.dumps(spec_of("layers", tau=1)).replace('"tau": 1', '"tau": 1' + "0" * 400),
        ".json"),
    "JSON integer 10**400 as n_tokens": (
        "n_tokens", "particles", None, "text",
        json.dumps(spec_of("particles", n_tokens=7)).replace('"n_tokens": 7',
                                                             '"n_tokens": 7' + "0" * 400),
        ".json"),
    "JSON integer with 5000 digits": (
        "not valid JSON", "derive", None, "text", '{"d": 1' + "0" * 5000 + "}", ".json"),
    "non-UTF-8 JSON spec": ("not UTF-8", "flow", None, "bytes",
                            b'{"t_final": 1, "x": "\xff\xfe"}', ".json"),
    "latin-1 YAML spec": ("not UTF-8", "certify", None, "bytes",
                          "params: {A: [[1]]}\n# déjà vu\n".encode("latin-1"), ".yaml"),
    "binary garbage": ("spec", "steer", None, "bytes",
                       bytes(np.random.default_rng(7).integers(0, 256, 512, dtype=np.uint8)),
                       ".json"),
    "UTF-8 text with NUL bytes (YAML)": ("not valid YAML", "layers", None, "text",
                                         "n_layers: 3\x00\x00\n", ".yaml"),
    "UTF-8 text with control bytes (JSON)": ("not valid JSON", "particles", None, "text",
                                             "\x01\x02{}", ".json"),
    "empty JSON file": ("empty", "equilibria", None, "text", "", ".json"),
    "whitespace-only YAML file": ("empty", "derive", None, "text", "  \n\t\n", ".yaml"),
    "YAML file of comments only": ("empty", "layers", None, "text", "# nothing\n# here\n",
                                   ".yaml"),
    "JSON spec that is a list": ("must be a mapping", "flow", None, "text", "[1, 2, 3]", ".json"),
    "YAML spec that is a list": ("must be a mapping", "certify", None, "text", "- a\n- b\n",
                                 ".yaml"),
    "JSON spec that is a number": ("must be a mapping", "steer", None, "text", "3", ".json"),
    "YAML spec that is a string": ("must be a mapping", "particles", None, "text", "hello",
                                   ".yaml"),
    "JSON NaN in a matrix": ("params.A[1][1]", "flow", None, "text",
                             json.dumps(spec_of("flow")).replace("-0.3", "NaN"), ".json"),
    "JSON Infinity as t_final": ("t_final", "flow", None, "text",
                                 json.dumps(spec_of("flow", t_final=123.0)).replace(
                                     "123.0", "Infinity"), ".json"),
    "JSON -Infinity in t_eval": ("t_eval[1]", "flow", None, "text",
                                 json.dumps(spec_of("flow", t_eval=[0, 777, 1])).replace(
                                     "777", "-Infinity"), ".json"),
    "JSON NaN as the seed": ("seed", "particles", None, "text",
                             json.dumps(spec_of("particles", seed=31337)).replace("31337", "NaN"),
                             ".json"),
    "YAML .nan in a covariance": ("initial.cov[0][0]", "certify", None, "text",
                                  "params: {A: [[-1]]}\ninitial: {mean: [0], cov: [[.nan]]}\n",
                                  ".yaml"),
    "YAML .inf as t_final": ("t_final", "flow", None, "text", FLOW_YAML + "t_final: .inf\n",
                             ".yaml"),
    "JSON duplicate key at the top level": (
        ("t_final", "twice"), "flow", None, "text",
        json.dumps(spec_of("flow"))[:-1] + ', "t_final": 2.0}', ".json"),
    "JSON duplicate key inside params": (
        ("params.A", "twice"), "equilibria", None, "text",
        '{"params": {"A": [[-1]], "A": [[-2]]}}', ".json"),
    "YAML duplicate key at the top level": (
        ("params", "twice"), "certify", None, "text",
        "params: {A: [[-1]]}\ninitial: {mean: [0], cov: [[1]]}\nparams: {A: [[1]]}\n", ".yaml"),
    "YAML duplicate key inside initial": (
        ("initial.mean", "twice"), "flow", None, "text",
        FLOW_YAML.replace("mean: [1.0, 0.0],", "mean: [1.0, 0.0], mean: [0, 0],")
        + "t_final: 1\n", ".yaml"),
    "YAML billion laughs": (
        "MAX_YAML_ALIASES", "flow", None, "text",
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
            f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n"
            for p, c in zip("abcdefgh", "bcdefghi", strict=True)),
        ".yaml"),
    "YAML doubling bomb under the alias count": (
        "t_eval", "flow", None, "text",
        FLOW_YAML + "t_final: 1\nt_eval: [&x0 [1, 1], " + ", ".join(
            f"&x{i} [*x{i - 1}, *x{i - 1}]" for i in range(1, 14)) + "]\n", ".yaml"),
    "YAML recursive alias": ("not valid YAML", "flow", None, "text",
                             "params: &p {A: [[1]], B: *p}\n", ".yaml"),
    "YAML self-containing list": ("spec", "layers", None, "text", "layers: &l [*l]\n", ".yaml"),
    "JSON nested 100 000 lists deep": ("nested", "flow", None, "text",
                                      '{"t_eval": ' + "[" * 100_000 + "]" * 100_000 + "}",
                                      ".json"),
    "YAML nested 10 000 flow lists deep": ("spec", "flow", None, "text",
                                          "t_eval: " + "[" * 10_000 + "]" * 10_000, ".yaml"),
    "JSON nested 40 deep (beyond MAX_SPEC_DEPTH)": (
        "MAX_SPEC_DEPTH", "derive", None, "text", '{"d": ' + "[" * 40 + "]" * 40 + "}", ".json"),
    "a matrix nested three deep": ("params.A", "flow", None, "text",
                                   json.dumps(spec_of("flow")).replace(
                                       '"A": [[-0.5, 0.2], [0.0, -0.3]]',
                                       '"A": [[[-0.5], [0.2]], [[0.0], [-0.3]]]'), ".json"),
    "YAML python object tag": ("not valid YAML", "flow", None, "text",
                               "params: !!python/object/apply:os.system ['echo pwned']\n",
                               ".yaml"),
    "YAML binary tag as a matrix": ("params.A", "equilibria", None, "text",
                                    "params: {A: !!binary aGVsbG8=}\n", ".yaml"),
    "YAML set as a matrix": ("params.A", "equilibria", None, "text",
                             "params: {A: !!set {1: null}}\n", ".yaml"),
    "YAML 1.1 sexagesimal number": ("t_final", "flow", None, "text",
                                    FLOW_YAML + "t_final: 1:30\n", ".yaml"),
    "YAML 1.1 underscore integer": ("n_layers", "layers", None, "text",
                                    FLOW_YAML + "n_layers: 1_000\ntau: 0.1\n", ".yaml"),
    "YAML 1.1 yes as a choice": ("which", "equilibria", None, "text",
                                 "params: {A: [[-1]]}\nwhich: yes\n", ".yaml"),
    "YAML timestamp as t_final": ("t_final", "flow", None, "text",
                                  FLOW_YAML + "t_final: 2001-12-14\n", ".yaml"),
    "YAML null as t_final": ("t_final", "flow", None, "text", FLOW_YAML + "t_final: ~\n",
                             ".yaml"),
    "YAML merge key": ("<<", "equilibria", None, "text",
                       "params: {<<: {A: [[-1]]}}\n", ".yaml"),
    "YAML integer key": ("keys must be strings", "derive", None, "text", "d: 2\n1: 2\n",
                         ".yaml"),
    "YAML two documents": ("not valid YAML", "derive", None, "text", "d: 2\n---\nd: 3\n",
                           ".yaml"),
    "JSON trailing comma": ("not valid JSON", "derive", None, "text", '{"d": 2,}', ".json"),
}, lambda item: refused(item[0], item[1], None, text=item[4], suffix=item[5]), timeout=20)


@case(AREA, "error", timeout=20)
def spec_file_larger_than_the_limit():
    from riccati_tf.io.spec import MAX_SPEC_BYTES

    text = json.dumps(spec_of("derive")) + " " * MAX_SPEC_BYTES
    refused("MAX_SPEC_BYTES", "derive", None, text=text)


@case(AREA, "error")
def spec_path_is_a_folder():
    refused("cannot read", "flow", spec_path="{tmp}")


@case(AREA, "error")
def spec_path_is_missing():
    refused("cannot read", "certify", spec_path="{tmp}/missing.yaml")


#: CPU seconds the alias bomb may take to be refused: a bound on the work (walking at most
#: MAX_SPEC_NODES values, about 1.3 s of CPU time measured), with a 15-fold margin; CPU time,
#: which a busy machine does not stretch the way it stretches wall time
BOMB_CPU_SECONDS = 20.0


@case(AREA, "error", timeout=4 * BOMB_CPU_SECONDS)
def yaml_bombs_are_refused_quickly():
    """30 aliases (under MAX_YAML_ALIASES) that expand 100 numbers 3¹⁰ times (5.9 million
    values): the expanded size is refused (MAX_SPEC_NODES) after a bounded amount of work,
    measured in CPU time (BOMB_CPU_SECONDS)."""
    text = (FLOW_YAML + "t_final: 1\nt_eval: [&x0 [" + ", ".join(["1"] * 100) + "], "
            + ", ".join(f"&x{i} [*x{i - 1}, *x{i - 1}, *x{i - 1}]" for i in range(1, 11))
            + "]\n")
    cpu = time.process_time()
    code, out, err = run("flow", None, text=text, suffix=".yaml")
    spent = time.process_time() - cpu  # CPU time (a bound on work), not wall time
    assert spent < BOMB_CPU_SECONDS, f"the alias bomb took {spent:.1f} s of CPU time to refuse"
    clean(code, out, err, "MAX_SPEC_NODES")


# ---------------------------------------------------------------- YAML 1.2 and JSON results


@case(AREA, "result")
def yaml_12_numbers_are_floats():
    text = ("params: {A: [[-5e-1, 2E-1], [0, -.3]], B: [[1., 0.2], [0.2, 6e-1]], "
            "V: [[-1, 0], [0, -1]]}\ninitial: {mean: [+1e0, -0.0], cov: [[1, 3e-1], [.3, .5]]}\n"
            "t_final: 1e0\nt_eval: [0, .5, 1E0]\n")
    out = accepted("flow", None, "--json", text=text, suffix=".yaml")
    check_flow_json(out, spec_of("flow"))


@case(AREA, "result")
def yaml_12_octal_and_hex_integers():
    out = accepted("layers", None, "--json", text=FLOW_YAML + "n_layers: 0o7\ntau: 0x1\n",
                   suffix=".yaml")
    got = json.loads(out)
    ref = layers(Params(**PARAMS), Gaussian(**INITIAL), 7, 1.0)
    close(got["cov"], ref.cov, what="layers cov")


@case(AREA, "result")
def yaml_aliases_within_the_limit_share_a_matrix():
    text = ("params:\n  A: [[-0.5, 0.2], [0.0, -0.3]]\n  heads:\n"
            "    - {V: &v [[-1, 0], [0, -1]], B: &b [[1.0, 0.2], [0.2, 0.6]]}\n"
            "    - {V: *v, B: *b}\n"
            "initial: {mean: [1.0, 0.0], cov: [[1.0, 0.3], [0.3, 0.5]]}\nt_final: 1\n")
    out = accepted("flow", None, "--json", text=text, suffix=".yml")
    V, B = PARAMS["V"], PARAMS["B"]
    spec = {"params": {"A": PARAMS["A"], "heads": [{"V": V, "B": B}] * 2}, "initial": INITIAL,
            "t_final": 1}
    check_flow_json(out, spec)


@case(AREA, "result")
def json_with_a_byte_order_mark():
    spec = spec_of("flow")
    out = accepted("flow", None, "--json", text=b"\xef\xbb\xbf" + json.dumps(spec).encode())
    check_flow_json(out, spec)


# ------------------------------------------------------------ unknown keys at every level

cases_of(AREA, "error", {
    "flow: metod instead of method": (
        "metod: unknown field; did you mean 'method'?", "flow", spec_of("flow", metod="exact")),
    "flow: t_finel instead of t_final": (
        "did you mean 't_final'", "flow", spec_of("flow", t_final=None, t_finel=1.0)),
    "flow: initial.covv": ("initial.covv: unknown field", "flow",
                           with_path(spec_of("flow"), "initial.covv", [[1]])),
    "flow: params.a (lower case)": ("params.a: unknown field", "flow",
                                    with_path(spec_of("flow"), "params.a", [[1]])),
    "flow: params.heads[1].VV": (
        "params.heads[1].VV: unknown field", "flow",
        spec_of("flow", params={"A": PARAMS["A"], "heads": [
            {"V": PARAMS["V"], "B": PARAMS["B"]}, {"VV": PARAMS["V"], "B": PARAMS["B"]}]})),
    "layers: layers[1].AA": (
        "layers[1].AA: unknown field", "layers",
        spec_of("layers", params=None, n_layers=2, layers=[PARAMS, {**PARAMS, "AA": 1}])),
    "layers: tau_": ("tau_: unknown field", "layers", spec_of("layers", tau_=0.1)),
    "derive: head instead of heads": ("did you mean 'heads'", "derive", {"d": 2, "head": 2}),
    "equilibria: wich": ("did you mean 'which'", "equilibria", spec_of("equilibria", wich="all")),
    "certify: inital": ("did you mean 'initial'", "certify",
                        spec_of("certify", initial=None, inital=INITIAL)),
    "certify: params.B_": ("params.B_: unknown field", "certify",
                           with_path(spec_of("certify"), "params.B_", [[1]])),
    "steer: target.sigma": ("target.sigma: unknown field", "steer",
                            with_path(spec_of("steer"), "target.sigma", [[1]])),
    "steer: control": ("did you mean 'controls'", "steer", spec_of("steer", control="affine")),
    "particles: nsteps": ("did you mean 'n_steps'", "particles",
                          spec_of("particles", n_steps=None, nsteps=2)),
    "particles: start instead of initial": ("start: unknown field", "particles",
                                            spec_of("particles", start=INITIAL)),
}, lambda item: refused(item[0], item[1], item[2]))


# --------------------------------------------------------------- wrong types and strings

cases_of(AREA, "error", {
    "flow: t_eval [0, '1']": ("t_eval[1]", "flow", spec_of("flow", t_eval=[0, "1"])),
    "flow: t_eval as one string": ("t_eval", "flow", spec_of("flow", t_eval="0, 1")),
    "flow: t_eval nested": ("t_eval", "flow", spec_of("flow", t_eval=[[0, 1]])),
    "flow: rtol as a string": ("rtol", "flow", spec_of("flow", rtol="1e-8")),
    "flow: method as a number": ("method", "flow", spec_of("flow", method=3)),
    "flow: method misspelled": ("did you mean 'exact'", "flow", spec_of("flow", method="exakt")),
    "flow: initial as a list": ("initial: must be a mapping", "flow",
                                spec_of("flow", initial=[1, 2])),
    "flow: t_final negative": ("t_final", "flow", spec_of("flow", t_final=-1.0)),
    "layers: n_layers as a string": ("n_layers", "layers", spec_of("layers", n_layers="5")),
    "layers: n_layers true": ("n_layers", "layers", spec_of("layers", n_layers=True)),
    "layers: n_layers zero": ("n_layers", "layers", spec_of("layers", n_layers=0)),
    "layers: tau a list": ("tau", "layers", spec_of("layers", tau=[0.1])),
    "layers: both params and layers": ("layers", "layers", spec_of("layers", layers=[PARAMS])),
    "layers: layers list shorter than n_layers": ("n_layers", "layers",
                                                  spec_of("layers", params=None,
                                                          layers=[PARAMS])),
    "derive: d as a float": ("d: must be an integer", "derive", {"d": 2.0}),
    "derive: kernel as a list": ("kernel", "derive", {"d": 2, "kernel": ["dot"]}),
    "equilibria: params as a list": ("params: must be a mapping", "equilibria",
                                     {"params": [[1, 0], [0, 1]]}),
    "certify: a boolean in the covariance": ("initial.cov[0][0]", "certify",
                                             with_path(spec_of("certify"), "initial.cov",
                                                       [[True, 0], [0, 1]])),
    "certify: null in b": ("params.b[0]", "certify",
                           with_path(spec_of("certify"), "params.b", [None, 0])),
    "certify: a mapping in A": ("params.A[0]", "certify",
                                with_path(spec_of("certify"), "params.A", [{"x": 1}, [0, 1]])),
    "steer: T as a string": ("T", "steer", spec_of("steer", T="1")),
    "steer: controls as a number": ("controls", "steer", spec_of("steer", controls=1)),
    "steer: unknown controls": ("controls", "steer", spec_of("steer", controls="magic")),
    "particles: seed 1.5": ("seed", "particles", spec_of("particles", seed=1.5)),
    "particles: n_tokens as a string": ("n_tokens", "particles",
                                        spec_of("particles", n_tokens="400")),
    "particles: heads not a list": ("params.heads", "particles",
                                    with_path(spec_of("particles"), "params",
                                              {"A": GENERAL["A"], "heads": {"V": 1}})),
    "particles: string deep in a head": (
        "params.heads[0].B[1][0]", "particles",
        with_path(spec_of("particles"), "params",
                  {"A": GENERAL["A"], "heads": [{"V": GENERAL["V"],
                                                 "B": [[1, 0], ["0", 1]]}]})),
    "particles: method euler2": ("method", "particles", spec_of("particles", method="euler2")),
}, lambda item: refused(item[0], item[1], item[2]))


# ----------------------------------------------------------------- sizes beyond the limits

BIG = 65
cases_of(AREA, "error", {
    "layers: n_layers 10**9": ("MAX_LAYERS", "layers", spec_of("layers", n_layers=10 ** 9)),
    "particles: n_tokens 10**12": ("MAX_TOKENS", "particles",
                                   spec_of("particles", n_tokens=10 ** 12)),
    "particles: n_steps 10**9": ("MAX_STEPS", "particles", spec_of("particles", n_steps=10 ** 9)),
    "particles: n_tokens² · n_steps over the work limit": (
        "MAX_PARTICLE_WORK", "particles", spec_of("particles", n_tokens=100_000, n_steps=1000)),
    "particles: negative seed": ("seed: must be ≥ 0", "particles", spec_of("particles", seed=-1)),
    "particles: seed 2**64": ("MAX_SEED", "particles", spec_of("particles", seed=2 ** 64)),
    "flow: 20 000 output times": ("MAX_T_EVAL", "flow",
                                  spec_of("flow", t_eval=list(np.linspace(0, 1, 20_000)))),
    "flow: a 65 × 65 matrix": ("MAX_DIM", "flow",
                               with_path(spec_of("flow"), "params.A", np.eye(BIG).tolist())),
    "flow: a mean of 10 000 entries": ("MAX_DIM", "flow",
                                       with_path(spec_of("flow"), "initial.mean",
                                                 [0.0] * 10_000)),
    "derive: heads 10**6": ("MAX_HEADS", "derive", {"d": 2, "heads": 10 ** 6}),
    "derive: d 10**9": ("MAX_DIM", "derive", {"d": 10 ** 9}),
    "derive: heads 0": ("heads", "derive", {"d": 2, "heads": 0}),
    "certify: 33 heads": ("MAX_HEADS", "certify",
                          with_path(spec_of("certify"), "params",
                                    {"A": PARAMS["A"], "heads": [{"V": PARAMS["V"],
                                                                  "B": PARAMS["B"]}] * 33})),
    "steer: d = 9 with affine controls": (
        "STEER_MAX_DIM", "steer", {"start": {"mean": [0] * 9, "cov": np.eye(9).tolist()},
                                   "target": {"mean": [1] * 9, "cov": (2 * np.eye(9)).tolist()},
                                   "T": 1.0}),
    "steer: d = 4 with the shooting controls 'values'": (
        "STEER_SHOOTING_MAX_DIM", "steer",
        {"start": {"mean": [0] * 4, "cov": np.eye(4).tolist()},
         "target": {"mean": [1] * 4, "cov": (2 * np.eye(4)).tolist()}, "T": 1.0,
         "controls": "values"}),
    "equilibria: which all at d = 11": ("11", "equilibria",
                                        {"params": {"A": (-np.eye(11)).tolist()},
                                         "which": "all"}),
}, lambda item: refused(item[0], item[1], item[2]), timeout=20)


@case(AREA, "error", timeout=20)
def layers_output_beyond_max_output():
    d = 64
    spec = {"params": {"A": (-np.eye(d)).tolist()},
            "initial": {"mean": [0.0] * d, "cov": np.eye(d).tolist()},
            "n_layers": 100_000, "tau": 0.01}
    tracemalloc.start()
    try:
        code, out, err = run("layers", spec)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # refused before the work: the 416 million numbers (3.3 GB) were never allocated (bytes
    # counted by tracemalloc, which traces numpy's buffers; the modules a first call imports
    # take about 22 MB)
    assert peak < 100_000_000, f"{peak} bytes allocated: the size was not refused before the work"
    clean(code, out, err, "MAX_OUTPUT")


# ------------------------------------------------------------ experiments: argument checks

cases_of(AREA, "error", {
    "prescribed --n-tokens 0": ("n_tokens", "prescribed", ["--n-tokens", "0"]),
    "prescribed --n-tokens -5": ("n_tokens", "prescribed", ["--n-tokens", "-5"]),
    "prescribed --n-tokens 1e3": ("--n-tokens", "prescribed", ["--n-tokens", "1e3"]),
    "prescribed --seed -1": ("seed must be ≥ 0", "prescribed", ["--seed", "-1"]),
    "relu-drift --n-tokens 10**12": ("MAX_TOKENS", "relu-drift", ["--n-tokens", str(10 ** 12)]),
    "relu-drift --n-tokens 3": ("n_tokens", "relu-drift", ["--n-tokens", "3"]),
    "relu-drift --seed 2**70": ("MAX_SEED", "relu-drift", ["--seed", str(2 ** 70)]),
    "probe --n-null 0": ("n_null", "probe", ["--n-null", "0"]),
    "probe --n-null 10**9": ("MAX_NULL", "probe", ["--n-null", str(10 ** 9)]),
    "probe --n-tokens -1": ("n_tokens", "probe", ["--n-tokens", "-1"]),
    "probe --n-tokens 10**12": ("MAX_TOKENS", "probe", ["--n-tokens", str(10 ** 12)]),
    "probe --seed -2": ("seed", "probe", ["--seed", "-2"]),
    "probe --seed with 5000 digits": ("--seed", "probe", ["--seed", "9" * 5000]),
}, lambda item: refused(item[0], item[1], None, *item[2], "--out", "{tmp}/out"))


def _file(name: str):
    def setup(tmp: Path) -> None:
        (tmp / name).write_text("the user's file")
    return setup


cases_of(AREA, "error", {
    "prescribed --out is a file": ("not a folder", "prescribed", "{tmp}/taken", _file("taken")),
    "relu-drift --out below a file": ("not a folder", "relu-drift", "{tmp}/taken/sub",
                                      _file("taken")),
    "probe --out below a file": ("not a folder", "probe", "{tmp}/taken/a/b", _file("taken")),
    "prescribed --out below a device": ("not a folder", "prescribed", "/dev/null/out", None),
    "relu-drift --out empty": ("out", "relu-drift", "", None),
}, lambda item: refused(item[0], item[1], None, "--n-tokens", "40", "--out", item[2],
                        setup=item[3]))


@case(AREA, "error")
def out_file_is_left_as_it_was():
    with tempfile.TemporaryDirectory() as tmp:
        taken = Path(tmp) / "taken"
        taken.write_text("the user's file")
        code, out, err = run_cli(["relu-drift", "--n-tokens", "40", "--out", str(taken)])
        assert taken.read_text() == "the user's file", "the user's file was changed"
        assert sorted(os.listdir(tmp)) == ["taken"], "files were written beside it"
    assert out == "", f"output printed before the refusal: {out[:100]!r}"
    clean(code, out, err, "not a folder")


# ----------------------------------------------------------------------- --plot targets

cases_of(AREA, "error", {
    "flow --plot into a folder": ("--plot", "flow", ["--plot", "{tmp}"]),
    "flow --plot out.pdf (PNG bytes under another extension)": ("ending in .png", "flow",
                                                               ["--plot", "{tmp}/out.pdf"]),
    "certify --plot out.SVG": ("ending in .png", "certify", ["--plot", "{tmp}/out.SVG"]),
    "layers --plot below a regular file": ("not a folder", "layers",
                                           ["--plot", "{tmp}/spec.json/fig.png"]),
    "certify --plot empty": ("--plot", "certify", ["--plot", ""]),
    "particles --plot below /dev/null": ("not a folder", "particles",
                                         ["--plot", "/dev/null/fig.png"]),
    "derive offers no --plot": ("unrecognized arguments: --plot", "derive",
                                ["--plot", "{tmp}/f.png"]),
    "equilibria offers no --plot": ("unrecognized arguments: --plot", "equilibria",
                                    ["--plot", "{tmp}/f.png"]),
    "steer --plot into a folder": ("--plot", "steer", ["--plot", "/"]),
}, lambda item: refused(item[0], item[1], SPECS[item[1]], *item[2]))


@case(AREA, "error")
def plot_to_a_full_device_prints_the_result_first():
    if not os.path.exists("/dev/full"):
        raise CleanError("no /dev/full here")
    spec = spec_of("flow")
    code, out, err = run("flow", spec, "--json", "--plot", "/dev/full")
    check_flow_json(out, spec)  # the numbers reached stdout before the figure failed
    clean(code, out, err, ("--plot", "/dev/full"))


@case(AREA, "result")
def plot_into_new_nested_folders():
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "a" / "b" / "fig.png"
        spec = spec_of("layers")
        out = accepted("layers", spec, "--json", "--plot", str(target))
        assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", "no PNG written"
    got = json.loads(out)
    ref = layers(Params(**PARAMS), Gaussian(**INITIAL), 3, 0.1)
    close(got["cov"], ref.cov, what="layers cov")


# ----------------------------------------------------------------------- argparse level

cases_of(AREA, "error", {
    "unknown subcommand": ("invalid choice", ["flwo", "x.json"]),
    "missing spec": ("spec", ["flow"]),
    "--plot without a file": ("--plot", ["flow", "x.json", "--plot"]),
    "misspelled option": ("--jsn", ["flow", "x.json", "--jsn"]),
}, lambda item: clean(*run_cli(item[1]), item[0]))


# ------------------------------------------------------------------- a closed stdout pipe


def _closed_pipe(command: str, spec: dict, *args: str, read: int = 10) -> None:
    """Run the CLI in a real process whose reader takes `read` bytes and closes the pipe (with
    read=0 it closes the pipe at once, before the process has written anything: it is still
    importing)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "spec.json"
        path.write_text(json.dumps(spec))
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        proc = subprocess.Popen([sys.executable, "-m", "riccati_tf.app.cli", command, str(path),
                                 *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env)
        head = proc.stdout.read(read) if read else b"-"
        proc.stdout.close()
        err = proc.stderr.read().decode(errors="replace")
        proc.stderr.close()
        code = proc.wait(timeout=60)
    assert head, "nothing was printed"
    if code == 1 or "Error" in err or "unexpected" in err:
        raise LeakedError(f"exit {code}, stderr {err.strip()[:300]!r}")
    assert code == 0 and err.strip() == "", f"exit {code}, stderr {err.strip()[:200]!r}"


BIG_FLOW = spec_of("flow", t_eval=list(np.linspace(0.0, 1.0, 5001)), method="rk")


def _closed_at_start(redirect: str, spec: dict, want: int) -> None:
    """Run the CLI with stdout or stderr closed from the start (`>&-`, `2>&-`): Python then has
    sys.stdout / sys.stderr = None."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "spec.json"
        path.write_text(json.dumps(spec))
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        command = f'"$0" -m riccati_tf.app.cli flow "$1" --json {redirect}'
        proc = subprocess.run(["sh", "-c", command,
                               sys.executable, str(path)], capture_output=True, env=env,
                              timeout=60)
    out, err = proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
    if proc.returncode == 1:
        raise LeakedError(f"exit 1: {err.strip()[:300]!r}")
    assert proc.returncode == want, f"exit {proc.returncode}, wanted {want}: {err[:200]!r}"
    assert "Traceback" not in out + err and "unexpected" not in out + err, (out + err)[:200]
    if redirect.startswith("2"):
        assert out == "" or out.startswith("{"), f"an error message reached stdout: {out[:100]!r}"


cases_of(AREA, "result", {
    "stdout closed from the start (>&-)": (">&-", spec_of("flow"), 0),
    "stderr closed from the start, an error (2>&-)": ("2>&-", spec_of("flow", metod="rk"), 2),
    "both closed from the start": (">&- 2>&-", spec_of("flow"), 0),
}, lambda item: _closed_at_start(*item), timeout=90)

cases_of(AREA, "result", {
    "flow --json | head -c 10 (closed pipe)": ("flow", BIG_FLOW, ("--json",), 10),
    "layers, pipe closed before any output": ("layers", SPECS["layers"], (), 0),
    "certify --json, pipe closed before any output": ("certify", SPECS["certify"], ("--json",),
                                                      0),
}, lambda item: _closed_pipe(item[0], item[1], *item[2], read=item[3]), timeout=90)


# ----------------------------------------------------------- results against the library


@case(AREA, "result")
def flow_json_equals_the_library():
    spec = spec_of("flow")
    check_flow_json(accepted("flow", spec, "--json"), spec)


@case(AREA, "result")
def flow_rk_json_equals_the_library():
    spec = spec_of("flow", params=GENERAL, method="rk", rtol=1e-9, atol=1e-11)
    check_flow_json(accepted("flow", spec, "--json"), spec)


@case(AREA, "result")
def flow_two_heads_equals_the_library():
    second = {"V": [[-0.5, 0], [0, -0.5]], "B": [[1, 0], [0, 1]]}
    spec = spec_of("flow", params={"A": PARAMS["A"], "b": [0.1, -0.2], "heads": [
        {"V": PARAMS["V"], "B": PARAMS["B"]}, second]})
    check_flow_json(accepted("flow", spec, "--json"), spec)


@case(AREA, "result")
def flow_one_dimensional_yaml_equals_json():
    text = "params: {A: [[-0.5]], B: [[1]], V: [[-1]]}\ninitial: {mean: [1], cov: [[2]]}\n" \
           "t_final: 2\n"
    out = accepted("flow", None, "--json", text=text, suffix=".yaml")
    check_flow_json(out, {"params": {"A": [[-0.5]], "B": [[1]], "V": [[-1]]},
                          "initial": {"mean": [1], "cov": [[2]]}, "t_final": 2})


@case(AREA, "result")
def layers_list_equals_the_library():
    other = {"A": [[0.1, 0], [0, 0.2]]}
    spec = spec_of("layers", params=None, n_layers=2, layers=[PARAMS, other])
    got = json.loads(accepted("layers", spec, "--json"))
    ref = layers([Params(**PARAMS), Params(**other)], Gaussian(**INITIAL), 2, 0.1)
    close(got["mean"], ref.mean, what="layers mean")
    close(got["cov"], ref.cov, what="layers cov")


@case(AREA, "result")
def certify_json_equals_the_library():
    got = json.loads(accepted("certify", spec_of("certify"), "--json"))
    g0 = Gaussian(**INITIAL)
    ref = certify(Params(**PARAMS), g0.cov, g0.mean)
    assert got["regime"] == ref.regime and got["check"] is True
    assert got["exact"] == ref.exact


@case(AREA, "result")
def equilibria_json_equals_the_library():
    got = json.loads(accepted("equilibria", spec_of("equilibria"), "--json"))["equilibria"]
    ref = equilibria(Params(**PARAMS))
    assert len(got) == len(ref)
    for g, r in zip(got, ref, strict=True):
        close(g["cov"], r.cov, what="equilibrium")


@case(AREA, "result")
def derive_json_equals_the_library():
    from riccati_tf.symbolic import transformer_system
    from riccati_tf.symbolic.latex import system_latex

    got = json.loads(accepted("derive", {"d": 2, "heads": 2, "kernel": "l2"}, "--json"))
    assert got["latex"] == system_latex(transformer_system(2, heads=2, kernel="l2"))


@case(AREA, "result")
def steer_json_equals_the_library():
    got = json.loads(accepted("steer", spec_of("steer"), "--json"))
    ref = steer(Gaussian(**INITIAL), Gaussian(**TARGET), 1.0)
    assert got["success"] is True and got["route"] == ref.route
    close(got["residual"], ref.residual, tol=1e-6, what="steer residual")


@case(AREA, "result")
def particles_json_equals_the_library():
    from riccati_tf.empirical.particles import simulate

    spec = spec_of("particles")
    got = json.loads(accepted("particles", spec, "--json"))
    g0 = Gaussian(**INITIAL)
    x0 = g0.sample(50, np.random.default_rng(1))
    ref = simulate(Params(**GENERAL), x0, 0.1, n_steps=2)
    close(got["cov"], ref.cov, what="particles cov")
    close(got["mean"], ref.mean, what="particles mean")


@case(AREA, "result")
def particles_largest_seed_runs():
    spec = spec_of("particles", seed=2 ** 63 - 1, n_tokens=10)
    got = json.loads(accepted("particles", spec, "--json"))
    assert got["n_tokens"] == 10


@case(AREA, "error")
def numerical_failure_exits_3():
    """A flow whose exact solution overflows: a SolverError, exit 3, one line."""
    spec = {"params": {"A": [[1.0]]}, "initial": {"mean": [0], "cov": [[1]]}, "t_final": 1e3,
            "method": "exact"}
    code, out, err = run("flow", spec, "--json")
    if code == 0:  # a method that reports the overflow as a blow-up is right too
        got = json.loads(out)
        assert got["status"] == "blowup" or np.all(np.isfinite(got["cov"])), got["status"]
        raise CleanError("the overflow was reported in the result")
    clean(code, out, err, "", exit_code=3)



# ------------------------------------------------- schedules (flow) and steering plans (steer)

def _moment_ode(params_list, breakpoints, mean, cov, t_eval):
    """An independent reference: scipy DOP853 (rtol 1e-12, atol 1e-14) on ṁ = (A + ΣV_h)m +
    Σ V_hΣB_h m + b, Σ̇ = AΣ + ΣAᵀ + Σ(V_hΣB_hΣ + ΣB_hᵀΣV_hᵀ), piece by piece."""
    from scipy.integrate import solve_ivp

    d = len(mean)
    y = np.concatenate([np.asarray(mean, float), np.asarray(cov, float).ravel()])
    out = {}
    for (t0, t1), p in zip(itertools.pairwise(breakpoints), params_list, strict=True):
        A, b = np.asarray(p["A"], float), np.asarray(p.get("b", np.zeros(d)), float)
        heads = [(np.asarray(p["V"], float), np.asarray(p["B"], float))] if "V" in p else \
            [(np.asarray(h["V"], float), np.asarray(h["B"], float)) for h in p.get("heads", [])]

        def rhs(_t, z, A=A, b=b, heads=heads):
            m, S = z[:d], z[d:].reshape(d, d)
            dm, dS = A @ m + b, A @ S + S @ A.T
            for V, B in heads:
                dm = dm + V @ m + V @ S @ B @ m
                dS = dS + V @ S @ B @ S + S @ B.T @ S @ V.T
            return np.concatenate([dm, dS.ravel()])
        ts = [t for t in t_eval if t0 <= t <= t1]
        sol = solve_ivp(rhs, (t0, t1), y, method="DOP853", rtol=1e-12, atol=1e-14,
                        dense_output=True)
        out.update({t: sol.sol(t) for t in ts})
        y = sol.y[:, -1]
    z = np.array([out[t] for t in t_eval])
    return z[:, :d], z[:, d:].reshape(-1, d, d)


def _schedule_case(pieces, breakpoints, initial, t_eval):
    spec = {"initial": initial, "t_final": breakpoints[-1], "t_eval": t_eval,
            "schedule": [{"t_end": t1, "params": p} for t1, p in zip(breakpoints[1:], pieces,
                                                                     strict=True)]}
    got = json.loads(accepted("flow", spec, "--json"))
    mean, cov = _moment_ode(pieces, breakpoints, initial["mean"], initial["cov"], t_eval)
    close(got["t"], t_eval, tol=0, what="schedule t")
    close(got["mean"], mean, tol=1e-8, what="schedule mean")
    close(got["cov"], cov, tol=1e-8, what="schedule cov")


SHEAR = {"A": [[0.0, 1.5], [-0.3, 0.1]], "b": [0.4, -0.2]}
cases_of(AREA, "result", {
    "schedule: attention then affine, outputs at the breakpoint": (
        [PARAMS, SHEAR], [0.0, 0.7, 1.5], INITIAL, [0.0, 0.7, 1.1, 1.5]),
    "schedule: three pieces, general V, two heads last": (
        [GENERAL, SHEAR, {"A": PARAMS["A"], "heads": [
            {"V": PARAMS["V"], "B": PARAMS["B"]}, {"V": [[0.2, 0], [0, 0.2]],
                                                   "B": [[0.5, 0.1], [0, 0.5]]}]}],
        [0.0, 0.25, 0.5, 2.0], INITIAL, [0.0, 0.3, 1.0, 2.0]),
    "schedule: 1-d, tiny pieces, rank-0 start": (
        [{"A": [[-1.0]], "b": [3.0]}, {"A": [[2.0]]}, {"A": [[0.5]], "V": [[1]], "B": [[1]]}],
        [0.0, 1e-3, 2e-3, 0.1], {"mean": [0.0], "cov": [[0.0]]}, [0.0, 0.05, 0.1]),
    "schedule: singular covariance, output times inside pieces only": (
        [SHEAR, PARAMS], [0.0, 0.4, 0.9], {"mean": [1.0, -1.0], "cov": [[1.0, 1.0], [1.0, 1.0]]},
        [0.1, 0.2, 0.8]),
}, lambda item: _schedule_case(*item))


def _steer_replay(start, target, T, controls):
    plan = json.loads(accepted("steer", {"start": start, "target": target, "T": T,
                                         "controls": controls}, "--json"))
    assert plan["success"] is True, plan["message"]
    got = json.loads(accepted("flow", plan["plan"], "--json"))
    want = {k: np.asarray(target[k], float) for k in ("mean", "cov")}
    scale = max(np.linalg.norm(want["mean"]), np.linalg.norm(start["mean"]),
                np.sqrt(np.linalg.norm(want["cov"])), np.sqrt(np.linalg.norm(start["cov"])))
    err_m = np.linalg.norm(np.array(got["mean"][-1]) - want["mean"]) / scale
    err_s = np.linalg.norm(np.array(got["cov"][-1]) - want["cov"]) / np.linalg.norm(want["cov"])
    assert max(err_m, err_s) <= plan["tolerance"], f"replay error {max(err_m, err_s):.3g}"


cases_of(AREA, "result", {
    "steer affine 2-d, replayed by flow": (INITIAL, TARGET, 1.0, "affine"),
    "steer attention 2-d (tracking piece), replayed": (INITIAL, TARGET, 0.5, "attention"),
    "steer full 3-d, rank 2, replayed": (
        {"mean": [0, 1, 0], "cov": [[1, 0, 0], [0, 2, 0], [0, 0, 0]]},
        {"mean": [2, 0, -1], "cov": [[1, 0, 0], [0, 0.5, 0.3], [0, 0.3, 0.18]]}, 3.0, "full"),
    "steer attention 1-d, long depth": ({"mean": [5.0], "cov": [[0.01]]},
                                        {"mean": [-5.0], "cov": [[4.0]]}, 20.0, "attention"),
}, lambda item: _steer_replay(*item), timeout=60)


def _tracking(d=2, **changes):
    base = {"K": np.eye(d).tolist(), "A": np.zeros((d, d)).tolist(), "V": np.eye(d).tolist(),
            "R": np.eye(d).tolist(), "L_start": np.eye(d).tolist(), "m_start": [0.0] * d,
            "b_path": [0.0] * d}
    return {**base, **changes}


def _sched(*entries, t_final=1.0, **top):
    return {"initial": INITIAL, "t_final": t_final, "schedule": list(entries), **top}


cases_of(AREA, "error", {
    "schedule and params together": ("give either params", _sched(
        {"t_end": 1.0, "params": PARAMS}, params=PARAMS)),
    "schedule is a mapping": ("schedule: must be a non-empty list", {
        "initial": INITIAL, "t_final": 1.0, "schedule": {"t_end": 1.0}}),
    "schedule entries decrease": ("schedule[1].t_end: must be >", _sched(
        {"t_end": 0.6, "params": PARAMS}, {"t_end": 0.3, "params": PARAMS})),
    "schedule ends before t_final": ("must end at t_final", _sched(
        {"t_end": 0.9999999, "params": PARAMS})),
    "schedule ends after t_final": ("must end at t_final", _sched(
        {"t_end": 2.0, "params": PARAMS})),
    "schedule t_end is NaN text": ("schedule[0].t_end: must be a number", _sched(
        {"t_end": "NaN", "params": PARAMS})),
    "schedule t_end negative": ("schedule[0].t_end: must be > 0", _sched(
        {"t_end": -1.0, "params": PARAMS})),
    "schedule t_start leaves a gap": ("schedule[1].t_start: must equal", _sched(
        {"t_end": 0.5, "params": PARAMS}, {"t_start": 0.6, "t_end": 1.0, "params": PARAMS})),
    "schedule piece with params and tracking": ("exactly one of params", _sched(
        {"t_end": 1.0, "params": PARAMS, "tracking": _tracking()})),
    "schedule piece in another dimension": ("acts on R^3", _sched(
        {"t_end": 1.0, "params": {"A": np.eye(3).tolist()}})),
    "schedule params with a string": ("schedule[0].params.A[1][1]", _sched(
        {"t_end": 1.0, "params": {"A": [[1, 0], [0, "1"]]}})),
    "schedule misspelled key": ("schedule[0].t_ned: unknown field", _sched(
        {"t_ned": 1.0, "params": PARAMS})),
    "schedule with too many pieces": ("schedule.MAX_SCHEDULE", _sched(
        *({"t_end": (k + 1) / 2000, "params": PARAMS} for k in range(2000)))),
    "tracking K of the wrong size": ("schedule[0].tracking.K: must be 2 × 2", _sched(
        {"t_end": 1.0, "tracking": _tracking(K=np.eye(3).tolist())})),
    "tracking L_start ragged": ("schedule[0].tracking.L_start: rows of unequal length", _sched(
        {"t_end": 1.0, "tracking": _tracking(L_start=[[1, 0], [0]])})),
    "tracking m_start missing": ("schedule[0].tracking.m_start: missing field", _sched(
        {"t_end": 1.0, "tracking": {k: v for k, v in _tracking().items() if k != "m_start"}})),
    "tracking with Infinity": ("schedule[0].tracking.b_path[1]", _sched(
        {"t_end": 1.0, "tracking": _tracking(b_path=[0.0, float("inf")])})),
    "tracking asked for the exact method": ("method: exact needs constant", _sched(
        {"t_end": 1.0, "tracking": _tracking()}, method="exact")),
    "schedule t_eval beyond t_final": ("t_eval", _sched(
        {"t_end": 1.0, "params": PARAMS}, t_eval=[0.0, 2.0])),
}, lambda item: refused(item[0], "flow", item[1]))


# ------------------------------------------------- tiny depths, non-regular spec files, control
# ------------------------------------------------- characters in what a refusal quotes


def steer_tiny_depth(T: float) -> None:
    """steer over a depth of a few subnormal spacings: the controls (A = log P/τ, b ~ Δm/τ) leave
    float64, which is the input's problem (exit 2 naming t_final and the shortest depth), not a
    numerical failure (it exited 3); where the depth suffices, the plan equals the library's."""
    spec = spec_of("steer", T=T)
    code, out, err = run("steer", spec, "--json")
    if code == 0:
        got = json.loads(out)
        ref = steer(Gaussian(**INITIAL), Gaussian(**TARGET), T)
        assert got["success"] is True and got["route"] == ref.route
        close(got["residual"], ref.residual, tol=1e-6, what="steer residual")
        return
    clean(code, out, err, ("t_final", "too short", "at least"), exit_code=2)


cases_of(AREA, "either", {f"steer over a depth of {T:g}": T
                          for T in (5e-324, 1e-323, 1e-320, 1e-310, 2.2e-308, 4e-309)},
         steer_tiny_depth)


def _fifo(tmp: Path) -> str:
    os.mkfifo(tmp / "spec.json")
    return str(tmp / "spec.json")


def _socket(tmp: Path) -> str:
    import socket

    path = tmp / "spec.sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))  # the file stays after the socket object is collected
    sock.close()
    return str(path)


def _link_to_fifo(tmp: Path) -> str:
    os.mkfifo(tmp / "pipe")
    (tmp / "spec.yaml").symlink_to(tmp / "pipe")
    return str(tmp / "spec.yaml")


NOT_REGULAR = {
    "spec path is a named pipe without a writer": ("a named pipe (FIFO)", _fifo),
    "spec path is a link to a named pipe": ("a named pipe (FIFO)", _link_to_fifo),
    "spec path is a socket": ("a socket", _socket),
    "spec path is /dev/zero": ("a character device", lambda tmp: "/dev/zero"),
    "spec path is /dev/null": ("a character device", lambda tmp: "/dev/null"),
    "spec path is a folder (no trailing slash)": ("a folder", lambda tmp: str(tmp)),
}


def spec_not_regular(item) -> None:
    """A spec path that is not a regular file is refused at once (exit 2, one line naming the
    path and its kind), before a byte is read: opening a FIFO with no writer blocked for ever,
    /dev/zero never ends."""
    kind, make = item
    with tempfile.TemporaryDirectory() as tmp:
        path = make(Path(tmp))
        if not os.path.exists(path):
            raise CleanError(f"{path} does not exist on this machine")
        clean(*run_cli(["flow", path]), ("cannot read", "not a regular file", kind))


cases_of(AREA, "error", NOT_REGULAR, spec_not_regular, timeout=10)

#: characters that act on a terminal or reorder what it shows: C0 controls, DEL, C1 controls,
#: bidirectional embeddings, overrides and isolates, marks, zero-width and separator characters
CONTROL_CHARACTERS = ("\x00", "\x07", "\x08", "\x1b", "\x7f", "\x85", "\x9b", "\u061c",
                      "\u200b", "\u200e", "\u200f", "\u202a", "\u202b", "\u202c", "\u202d",
                      "\u202e", "\u2028", "\u2029", "\u2066", "\u2067", "\u2068", "\u2069",
                      "\ufeff", "\ue000", "\U000e0001")


def _escaped_line(err: str, ch: str) -> None:
    """The refusal's one line holds no character of ESCAPED_CATEGORIES and shows `ch` escaped."""
    import unicodedata

    from riccati_tf.io.spec import ESCAPED_CATEGORIES

    line = err.rstrip("\n")
    raw = [f"U+{ord(c):04X}" for c in line if unicodedata.category(c) in ESCAPED_CATEGORIES]
    assert not raw, f"the message echoes {raw} raw: {line!r}"
    assert ch.encode("unicode_escape").decode("ascii") in line, f"{ch!r} not shown: {line!r}"


def control_character_in_a_key(ch: str) -> None:
    """A misspelled key holding `ch` is refused naming it, the character escaped (it was echoed
    raw: a right-to-left override reversed the rest of the line, ESC started a terminal
    sequence, NUL ended C strings)."""
    spec = spec_of("flow", params={**PARAMS, f"B{ch}x": 1.0})
    code, out, err = run("flow", spec)
    assert code == 2, f"exit {code}: {err!r}"
    _escaped_line(err, ch)
    clean(code, out, err, "unknown field")


def control_character_in_a_path(ch: str) -> None:
    """A missing spec file whose name holds `ch` (a NUL cannot be part of any file name): the
    refusal names the path, escaped."""
    code, out, err = run_cli(["flow", f"/nonexistent/sp{ch}ec.json"])
    assert code == 2, f"exit {code}: {err!r}"
    _escaped_line(err, ch)
    clean(code, out, err, "cannot read")


def control_character_in_an_option(ch: str) -> None:
    """An unknown option holding `ch` (argparse's own refusal): escaped too."""
    code, out, err = run("flow", spec_of("flow"), f"--bogus{ch}")
    assert code == 2, f"exit {code}: {err!r}"
    _escaped_line(err, ch)
    clean(code, out, err, "unrecognized arguments")


for _ch in CONTROL_CHARACTERS:
    _label = f"U+{ord(_ch):04X}"
    case(AREA, "error", name=f"control character {_label} in a spec key")(
        lambda ch=_ch: control_character_in_a_key(ch))
    case(AREA, "error", name=f"control character {_label} in the spec path")(
        lambda ch=_ch: control_character_in_a_path(ch))
    case(AREA, "error", name=f"control character {_label} in an option")(
        lambda ch=_ch: control_character_in_an_option(ch))
