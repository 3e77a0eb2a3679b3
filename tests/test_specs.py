"""The spec files of the command line, described once (riccati_tf.app.specs): every key a
subcommand's loader accepts, at every level, is documented in its schema and every documented key
is accepted; --help lists the fields; the shipped examples run and --example prints them."""

import copy
import inspect
import itertools
import json
import pkgutil
import re
from importlib import import_module
from pathlib import Path

import pytest
import yaml

from riccati_tf.app import cli
from riccati_tf.app.cli import COMMANDS, build_parser, main
from riccati_tf.app.specs import REQUIRED, SCHEMAS, Field, example_text, render_fields
from riccati_tf.io import spec as spec_module
from riccati_tf.io.spec import load_spec
from riccati_tf.sweep import family as family_module

EXAMPLES = Path(cli.__file__).parents[1] / "example_specs"  # riccati_tf/app/example_specs
#: a key no schema documents
UNDOCUMENTED = "zz_undocumented"
#: a value no field accepts (strings are never numbers, and no choice is spelled so)
SENTINEL = "?"
#: the modules named by the limits of the schemas (``VALUE (module.NAME)``)
MODULES = {"cli": "riccati_tf.app.cli", "spec": "riccati_tf.io.spec",
           "schedule": "riccati_tf.app.schedule", "family": "riccati_tf.sweep.family",
           "validation": "riccati_tf.state.validation", "flows": "riccati_tf.flows.integrate",
           "equilibria": "riccati_tf.stability.equilibria"}

HEADS = {"A": [[0.5, 0.0], [0.0, 0.5]], "b": [0, 0],
         "heads": [{"V": [[-1, 0], [0, -1]], "B": [[1, 0], [0, 1]]}]}


def example(command):
    return yaml.safe_load(example_text(command))


def bases(command):
    """Specs in which each nested mapping of the schema is reached by the loader (valid up to
    it), tried in this order, the shipped example last."""
    ex = example(command)
    extra = {
        "flow": lambda: [{**ex, "params": HEADS},
                         {"initial": ex["initial"], "t_final": 2.0,
                          "schedule": [{"t_start": 0, "t_end": 1.0, "params": HEADS},
                                       {"t_end": 2.0, "tracking": {}}]}],
        "layers": lambda: [{**ex, "params": HEADS},
                           {"initial": ex["initial"], "layers": [HEADS], "n_layers": 1,
                            "tau": 0.1}],
        "design": lambda: [{**ex, "repair": {**ex["repair"], "params": HEADS}}],
        "sweep": lambda: [{**ex, "analysis": "particles",
                           "family": {"random": {"n": 2, "seed": 0,
                                                 "axes": {"v": {"uniform": [-1, 1]},
                                                          "a": {"uniform": [-0.5, 0.5]}}}},
                           "params": {"A": ex["params"]["A"],
                                      "heads": [{"B": [[1, 0], [0, 1]],
                                                 "V": {"v": [[1, 0], [0, 1]]}}]},
                           "particles": {"n_tokens": 10, "n_steps": 1}}],
    }
    heads = [{**ex, "params": HEADS}] if "params" in ex else []
    return [*extra.get(command, lambda: heads)(), ex]


def argv(command, path):
    sweep = ["--scheduler", "inprocess", "--out", str(path.with_suffix(".sweep"))]
    design = ["--out", str(path.with_suffix(".design"))]
    return [command, str(path), *{"sweep": sweep, "design": design}.get(command, [])]


@pytest.fixture
def run(tmp_path, capsys):
    """run(command, spec mapping) → (exit code, stdout, stderr), each spec in its own file."""
    count = itertools.count()

    def run(command, spec, *extra):
        path = tmp_path / f"spec{next(count)}.json"
        path.write_text(json.dumps(spec))
        code = main([*argv(command, path), *extra])
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def checked(monkeypatch):
    """Every (where, allowed keys) that the loaders pass to check_keys, as they run."""
    seen = []
    real = spec_module.check_keys

    def spy(spec, allowed, where=""):
        allowed = tuple(allowed)
        seen.append((where, allowed))
        return real(spec, allowed, where)

    # the command line's modules that call it (riccati_tf.app.cli is a package of them)
    commands = [import_module(f"riccati_tf.app.cli.{m.name}")
                for m in pkgutil.iter_modules(cli.__path__) if m.name != "__main__"]
    for module in (spec_module, *[m for m in commands if hasattr(m, "check_keys")],
                   family_module):  # check_mapping calls spec's own
        monkeypatch.setattr(module, "check_keys", spy)
    return seen


def walk(fields, path=()):
    """(path of names, field) of every field, depth first."""
    for f in fields:
        yield (*path, f.name), f
        yield from walk(f.fields, (*path, f.name))


def shown(fields, prefix=""):
    """(name as --help shows it, field): params.A, schedule[].t_end."""
    for f in fields:
        yield prefix + f.name, f
        yield from shown(f.fields, prefix + f.name + ("[]." if f.repeated else "."))


def schema_path(fields, where):
    """The schema path of a loader's `where` ("schedule[1].tracking." → schedule, tracking;
    an axis name → <axis>) and the documented fields there."""
    path = []
    where = re.sub(r"\[\d+\]| \(.*\)", "", where).strip(".")
    for part in where.split(".") if where else []:
        f = next((f for f in fields if f.name == part), None) or \
            next(f for f in fields if f.name.startswith("<"))
        path.append(f.name)
        fields = f.fields
    return tuple(path), fields


def locate(node, path):
    """The mapping at `path` in a spec (in a list, the first entry that has it; <axis>: the
    first key), or None."""
    if isinstance(node, list):
        return next((m for m in (locate(e, path) for e in node) if m is not None), None)
    if not isinstance(node, dict):
        return None
    if not path:
        return node
    name = next(iter(node), None) if path[0].startswith("<") else path[0]
    return locate(node[name], path[1:]) if name in node else None


def test_every_spec_reading_subcommand_has_a_schema_and_an_example():
    assert set(SCHEMAS) == {name for name, (_h, _f, needs_spec) in COMMANDS.items()
                            if needs_spec}
    assert {p.name for p in EXAMPLES.iterdir()} == {f"{name}.yaml" for name in SCHEMAS}
    # the checkout's examples/specs/ is the package's folder (one copy, shipped in the wheel)
    top = Path(__file__).parents[1] / "examples" / "specs"
    assert top.resolve() == Path(str(EXAMPLES)).resolve()
    for name, schema in SCHEMAS.items():
        assert schema.command == name
        for path, f in walk(schema.fields):
            assert isinstance(f, Field) and f.type and f.default and f.meaning, path


@pytest.mark.parametrize("command", sorted(SCHEMAS))
def test_the_loader_accepts_exactly_the_documented_keys(run, checked, command, monkeypatch):
    # the loaders' own key checks, level by level: the command line's check of all keys at
    # once (key_problems, tested below) is switched off here
    monkeypatch.setattr(cli.command, "key_problems", lambda schema, spec: [])
    schema = SCHEMAS[command]
    # top level: each documented key alone is accepted (then a field is missing or invalid)
    for key in schema.names:
        code, _, err = run(command, {key: SENTINEL})
        assert code == 2 and "unknown field" not in err, (key, err)
    code, _, err = run(command, {UNDOCUMENTED: 1})
    assert code == 2 and f"{UNDOCUMENTED}: unknown field" in err
    # every nested mapping whose keys are fixed names: each documented key is accepted (its
    # value then refused), an undocumented one refused as unknown
    specs = bases(command)
    nested = [(path, f.fields) for path, f in walk(schema.fields)
              if f.fields and not any(g.name.startswith("<") for g in f.fields)]
    for path, fields in nested:
        base = next(b for b in specs if locate(b, path) is not None)
        for key in [*(f.name for f in fields), UNDOCUMENTED]:
            spec = copy.deepcopy(base)
            locate(spec, path)[key] = SENTINEL
            code, _, err = run(command, spec)
            assert code == 2, (path, key, err)
            unknown = "unknown field" in err
            assert unknown == (key == UNDOCUMENTED), (path, key, err)
            assert not unknown or f"{UNDOCUMENTED}: unknown field" in err
    # what the loaders allow, at every level they reached, is documented (that every documented
    # key is allowed, the feeding above shows); sweep also checks the layer it builds at the
    # corners of the axes' box as a plain params mapping, a subset of its own
    reached = set()
    for where, allowed in checked:
        path, fields = schema_path(schema.fields, where)
        assert set(allowed) <= {f.name for f in fields}, (command, where)
        reached.add(path)
    assert {(), *(path for path, _ in nested)} <= reached


@pytest.mark.parametrize("command", sorted(SCHEMAS))
def test_help_lists_every_field_with_type_default_and_limit(command):
    sub = build_parser()._subparsers._group_actions[0].choices[command]
    text = sub.format_help()
    assert f"riccati-tf {command} --example" in text and "--example" in text.split("spec fields")[0]
    flat = " ".join(text.split())  # the meanings and limits are wrapped
    for name, f in shown(SCHEMAS[command].fields):
        row = re.search(rf"^  {re.escape(name)} +{re.escape(f.type)} +(.+)$", text, re.M)
        assert row is not None and row[1] == f.default, (command, name)
        assert f.meaning in flat and " ".join(f"limit: {f.limit}".split()) in flat, name


def test_flow_help_documents_t_final_and_the_tolerances():
    text = build_parser()._subparsers._group_actions[0].choices["flow"].format_help()
    assert re.search(r"^  t_final +float > 0 +required$", text, re.M)
    assert re.search(r"^  rtol +float +1e-10$", text, re.M)
    assert "0 < rtol < 1" in text


@pytest.mark.parametrize("command", sorted(SCHEMAS))
def test_example_is_printed_by_example_and_runs(tmp_path, capsys, command):
    with pytest.raises(SystemExit) as exc:
        main([command, "--example"])
    assert exc.value.code == 0
    printed = capsys.readouterr().out
    assert printed == (EXAMPLES / f"{command}.yaml").read_text(encoding="utf-8")
    path = tmp_path / f"{command}.yaml"
    path.write_text(printed)
    spec = load_spec(path)
    assert spec == yaml.safe_load(printed) and set(spec) <= set(SCHEMAS[command].names)
    assert all(key in spec for key, f in ((f.name, f) for f in SCHEMAS[command].fields)
               if f.default == REQUIRED)
    code = main([*argv(command, path), "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)


@pytest.mark.parametrize("command", sorted(SCHEMAS))
def test_a_field_missing_from_the_schema_is_refused_in_one_line(run, command):
    code, out, err = run(command, {**example(command), UNDOCUMENTED: 1})
    assert code == 2 and out == ""
    assert err.startswith(f"riccati-tf {command}: error: {UNDOCUMENTED}: unknown field")
    assert len(err.strip().splitlines()) == 1


def test_limits_and_defaults_are_the_constants_they_name():
    texts = [f"{f.limit} {f.default}" for schema in SCHEMAS.values()
             for _, f in walk(schema.fields)]
    found = set(re.findall(r"([\d^−]+) \((\w+)\.([A-Z_]+)\)", " ".join(texts)))
    assert len(found) >= 15
    for value, module, name in found:
        number = eval(value.replace("^", "**").replace("−", "-"), {"__builtins__": {}})
        assert number == getattr(import_module(MODULES[module]), name), (module, name)
    from riccati_tf.flows.integrate import flow

    flow_fields = {f.name: f for f in SCHEMAS["flow"].fields}
    defaults = inspect.signature(flow).parameters
    for key in ("rtol", "atol", "method"):
        assert flow_fields[key].default == str(defaults[key].default)


def test_the_documentation_shows_the_fields_of_every_spec(monkeypatch):
    """docs/cli.rst renders each subcommand's help with docs/_ext/cli_help.py: the tables are
    there verbatim."""
    pytest.importorskip("sphinx")
    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "docs" / "_ext"))
    cli_help = import_module("cli_help")
    subs = cli_help.subcommands(build_parser())
    for name, schema in SCHEMAS.items():
        assert render_fields(schema) in cli_help.help_text(subs[name]), name
    assert "t_final" in cli_help.help_text(subs["flow"])


def test_every_key_problem_is_reported_at_once(run):
    """Misspelt and missing keys at every level in one line (values are checked one at a time,
    by the parser, once the keys are right); a single problem reads as the parser says it."""
    spec = {"params": {"A": [[0.5, 0], [0, 0.5]], "Bq": 1}, "initial": {"covv": 1},
            "t_final": 1.0, "rtoll": 1e-9}
    code, _, err = run("flow", spec)
    assert code == 2 and len(err.strip().splitlines()) == 1
    for problem in ("rtoll: unknown field; did you mean 'rtol'?",
                    "params.Bq: unknown field; did you mean 'B'?",
                    "initial.covv: unknown field; did you mean 'cov'?",
                    "initial.mean: missing field", "initial.cov: missing field"):
        assert problem in err, (problem, err)
    assert "5 problems" in err
    code, _, err = run("certify", {"params": {"A": [[1.0]]}, "initial": {"mean": [0], "cov": [[1]],
                                                                      "metod": 1}})
    assert code == 2 and err.strip().endswith("initial.metod: unknown field; allowed: cov, mean")
