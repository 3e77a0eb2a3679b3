"""The package's one rule for randomness (`riccati_tf.state.validation.as_seed`): every entry
point that draws random numbers is reproducible. It takes a `seed` (an integer in [0, MAX_SEED],
default 0) or, for an `rng` argument, a seed or a numpy Generator; None (fresh entropy),
booleans, floats, negative or oversized integers are refused with InvalidInputError naming the
argument. The entry points are found by walking the package, so a new one must join the
table below (and so the rule)."""

import importlib
import inspect
import pkgutil

import numpy as np
import pytest

import riccati_tf
from riccati_tf.errors import InvalidInputError
from riccati_tf.state.params import Gaussian, Params
from riccati_tf.state.validation import MAX_SEED

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from riccati_tf.app import experiments as xp  # noqa: E402
from riccati_tf.empirical import families as fam  # noqa: E402
from riccati_tf.empirical import gaussianity as ga  # noqa: E402
from riccati_tf.empirical import particles as pa  # noqa: E402
from riccati_tf.empirical import probe as pr  # noqa: E402
from riccati_tf.empirical.encoders import closures as cl  # noqa: E402
from riccati_tf.empirical.encoders import comparison as co  # noqa: E402
from riccati_tf.empirical.encoders import extraction as ex  # noqa: E402
from riccati_tf.empirical.encoders import loading as lo  # noqa: E402
from riccati_tf.empirical.encoders import measured as me  # noqa: E402
from riccati_tf.empirical.encoders import outputs as ou  # noqa: E402
from riccati_tf.empirical.encoders import propagation as pp  # noqa: E402
from riccati_tf.empirical.encoders import sequences as sq  # noqa: E402
from riccati_tf.empirical.encoders import tiny as ti  # noqa: E402
from riccati_tf.empirical.encoders import validity as va  # noqa: E402
from riccati_tf.empirical.gaussianity import distances as gd  # noqa: E402
from riccati_tf.reachability import lie  # noqa: E402
from riccati_tf.sweep.family import parse_family  # noqa: E402

NAMES = ("rng", "seed")  # and every *_seed


def _random_parameters():
    """{qualified name: the random argument's name and default} over the public functions and
    public methods of public classes (names without a leading underscore) of every riccati_tf
    module."""
    found = {}
    for info in pkgutil.walk_packages(riccati_tf.__path__, "riccati_tf."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                continue  # private, or re-exported: counted where it is defined
            members = [(name, obj)] if inspect.isfunction(obj) else [
                (f"{name}.{m}", f) for m, f in vars(obj).items()
                if inspect.isfunction(f) and not m.startswith("_")] if inspect.isclass(obj) \
                else []
            for qual, fn in members:
                for p in inspect.signature(fn).parameters.values():
                    if p.name in NAMES or p.name.endswith("_seed"):
                        found[f"{module.__name__}.{qual}"] = (p.name, p.default)
    return found


@pytest.fixture(scope="module")
def model():
    return ti.tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=1)


X = np.random.default_rng(0).standard_normal((20, 2))
I8 = np.eye(8)

#: qualified name → call(model, seed) with everything else minimal
CALLS = {
    "riccati_tf.state.params.Gaussian.sample": lambda m, s: Gaussian([0, 0], np.eye(2)).sample(
        3, s),
    "riccati_tf.empirical.gaussianity.distances.statistics": lambda m, s: ga.statistics(X, seed=s),
    "riccati_tf.empirical.gaussianity.distances.directions": lambda m, s: gd.directions(2, 3, s),
    "riccati_tf.empirical.probe.projection": lambda m, s: pr.projection(3, 3, s),
    "riccati_tf.empirical.encoders.propagation.layer_moments": lambda m, s: pp.layer_moments(
        ex.extract(m).layers[0], np.zeros(8), I8, terms=4, gated_samples=64, seed=s),
    "riccati_tf.empirical.gaussianity.null.null_distribution":
        lambda m, s: ga.null_distribution(20, 2, n_null=2, seed=s),
    "riccati_tf.empirical.gaussianity.normality.normality_test":
        lambda m, s: ga.normality_test(X, n_null=2, seed=s),
    "riccati_tf.empirical.gaussianity.marginal.marginal_test":
        lambda m, s: ga.marginal_test(X, seed=s),
    "riccati_tf.empirical.particles.simulate": lambda m, s: pa.simulate(
        Params(-np.eye(2)), X, 1.0, n_steps=1, metrics=True, metrics_seed=s),
    "riccati_tf.empirical.probe.tiny_model":
        lambda m, s: pr.tiny_model("bert", hidden_size=8, n_layers=1, seed=s),
    "riccati_tf.empirical.probe.check_probe_arguments":
        lambda m, s: pr.check_probe_arguments(n_tokens=10, seed=s),
    "riccati_tf.empirical.probe.probe": lambda m, s: pr.probe(m, n_tokens=10, n_null=2, seed=s),
    "riccati_tf.empirical.encoders.comparison.compare":
        lambda m, s: co.compare(m, n_tokens=10, seed=s),
    "riccati_tf.empirical.encoders.comparison.measure": lambda m, s: co.measure(
        lo.capture(m, X8)[0], pp.predict_moments(ex.extract(m), np.zeros(8), I8),
        lengths=(10,), seed=s),
    "riccati_tf.empirical.encoders.comparison.baselines": lambda m, s: co.baselines(
        lo.capture(m, X8)[0], pp.predict_moments(ex.extract(m), np.zeros(8), I8),
        ex.extract(m), None, (10,), seed=s),
    "riccati_tf.empirical.encoders.loading.embedding_moments":
        lambda m, s: lo.embedding_moments(m, seed=s),
    "riccati_tf.empirical.encoders.loading.model_inputs":
        lambda m, s: lo.model_inputs(m, n_tokens=10, seed=s),
    "riccati_tf.empirical.encoders.outputs.load": lambda m, s: ou.load(None, seed=s),
    "riccati_tf.empirical.encoders.outputs.analyse":
        lambda m, s: ou.analyse(m, n_tokens=10, seed=s),
    "riccati_tf.empirical.encoders.outputs.report_parts":
        lambda m, s: ou.report_parts(None, quick=True, seed=s),
    "riccati_tf.empirical.encoders.propagation.predict_moments":
        lambda m, s: pp.predict_moments(ex.extract(m), seed=s),
    "riccati_tf.empirical.encoders.closures.mlp_closure":
        lambda m, s: cl.mlp_closure(ex.extract(m).layers[0].mlp, np.zeros(8), I8, seed=s),
    "riccati_tf.empirical.encoders.tiny.tiny_encoder":
        lambda m, s: ti.tiny_encoder("bert", hidden_size=8, n_heads=2, n_layers=1, seed=s),
    "riccati_tf.empirical.encoders.tiny.trained_like_encoder":
        lambda m, s: ti.trained_like_encoder(hidden_size=8, n_heads=2, n_layers=1, seed=s),
    "riccati_tf.empirical.encoders.validity.validity_map":
        lambda m, s: va.validity_map(ex.extract(m), [X8], (10,), seed=s),
    "riccati_tf.reachability.lie.points.stratum_point":
        lambda m, s: lie.stratum_point(2, 1, seed=s),
    "riccati_tf.reachability.lie.rank.accessibility_rank":
        lambda m, s: lie.accessibility_rank("values", 1, seed=s),
    "riccati_tf.reachability.lie.table.accessibility_table":
        lambda m, s: lie.accessibility_table((1,), "values", seed=s),
    "riccati_tf.reachability.lie.table.accessibility_document":
        lambda m, s: lie.accessibility_document((1,), seed=s),
    "riccati_tf.empirical.families.opposite_sign_layer":
        lambda m, s: fam.opposite_sign_layer(2, s, heads=1),
    "riccati_tf.empirical.families.random_sign_layer":
        lambda m, s: fam.random_sign_layer(2, s, heads=1),
    "riccati_tf.empirical.families.initial_state": lambda m, s: fam.initial_state(2, s),
    "riccati_tf.empirical.families.family_cases":
        lambda m, s: fam.family_cases((2,), 1, seed=s),
    "riccati_tf.empirical.encoders.measured.measured_moments":
        lambda m, s: me.measured_moments(m, ex.extract(m), sq.data_inputs("hidden", "x", [X8]),
                                         seed=s),
    "riccati_tf.app.experiments.prescribed_attention":
        lambda m, s: xp.prescribed_attention(n_tokens=10, seed=s),
    "riccati_tf.app.experiments.relu_drift": lambda m, s: xp.relu_drift(n_tokens=10, seed=s),
    "riccati_tf.app.experiments.run_prescribed":
        lambda m, s: xp.run_prescribed("unused-out", n_tokens=10, seed=s),
    "riccati_tf.app.experiments.run_relu_drift":
        lambda m, s: xp.run_relu_drift("unused-out", n_tokens=10, seed=s),
    "riccati_tf.app.experiments.run_probe":
        lambda m, s: xp.run_probe(None, "unused-out", n_tokens=10, seed=s),
    # a sweep family's seed is a field of its spec (Family is built by parse_family only)
    "riccati_tf.sweep.family.Family.__init__": lambda m, s: parse_family(
        {"family": {"random": {"n": 2, "seed": s, "axes": {"v": {"uniform": [-1, 1]}}}},
         "params": {"A": [[-1.0]], "B": [[1.0]], "v": {"v": 1}}, "initial": {"cov": [[1.0]]}}),
}
X8 = np.random.default_rng(1).standard_normal((10, 8))


def test_every_random_entry_point_follows_the_rule():
    found = _random_parameters()
    found.pop("riccati_tf.sweep.family.Family.__init__", None)  # a dataclass: from its spec
    assert set(found) == set(CALLS) - {"riccati_tf.sweep.family.Family.__init__"}
    for name, (arg, default) in found.items():
        # a seed defaults to 0 (reproducible) or must be given; never None (fresh entropy)
        assert default is inspect.Parameter.empty or (default == 0
                                                     and not isinstance(default, bool)), name
        doc = inspect.getdoc(_resolve(name)) or ""
        assert arg in doc, f"{name} does not document {arg}"


def _resolve(name):
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise AssertionError(name)


BAD = {"None": None, "negative": -1, "bool": True, "float": 1.5, "above MAX_SEED": MAX_SEED + 1,
       "string": "7", "legacy RandomState": np.random.RandomState(0)}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_random_entry_points_refuse_what_is_not_a_seed(name, model, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the experiments' output folders, never written (refused)
    arg = "rng" if name.endswith("sample") else "seed"
    for label, bad in BAD.items():
        with pytest.raises(InvalidInputError, match=arg) as info:
            CALLS[name](model, bad)
        assert "Traceback" not in str(info.value), label
    assert not any(tmp_path.iterdir())


def test_the_same_seed_draws_the_same_numbers(model):
    g = Gaussian([1.0, -1.0], [[2.0, 1.0], [1.0, 1.0]])
    np.testing.assert_array_equal(g.sample(5), g.sample(5, 0))
    np.testing.assert_array_equal(g.sample(5, 11), g.sample(5, np.random.default_rng(11)))
    gen = np.random.default_rng(3)
    assert not np.array_equal(g.sample(5, gen), g.sample(5, gen))  # a Generator moves on
    np.testing.assert_array_equal(g.sample(5, MAX_SEED), g.sample(5, MAX_SEED))
    for call in (lambda s: ga.statistics(X, seed=s).as_dict(),
                 lambda s: lie.stratum_point(3, 2, seed=s)[1].tolist(),
                 lambda s: pa.simulate(Params(-np.eye(2)), X, 1.0, n_steps=1, metrics=True,
                                       metrics_seed=s).metrics,
                 lambda s: lo.model_inputs(model, n_tokens=10, seed=s).tokens.tolist()):
        first, again, other = (repr(call(s)) for s in (5, 5, 6))
        assert first == again and first != other
