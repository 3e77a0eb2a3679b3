"""The spec files of the command line, described once: one `SpecSchema` per subcommand that
reads a spec, a tuple of `Field` rows (name, type, default, limit, meaning; a mapping field
holds its own fields).

The same data serve three readers: the subcommands of `riccati_tf.app.cli` take their allowed
top-level keys from it (`SpecSchema.names`, passed to `riccati_tf.io.spec.check_keys`), their
``--help`` ends with its table (`render_fields`), and ``riccati-tf SUB --example`` prints the
example spec shipped with it (`example_text`, the files ``example_specs/SUB.yaml`` of this
package). The nested mappings are read by the parsers below the application (`io.spec`,
`app.schedule`, `sweep.family`); tests/test_specs.py feeds every documented key and an
undocumented one to the real command line, at every level, so a key the parsers accept and the
schema does not list (or the reverse) fails a test.

A limit that is a module constant is written ``VALUE (module.NAME)``, and the tests check the
value against the constant.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources

from ..io.spec import unknown_keys

__all__ = ["REQUIRED", "SCHEMAS", "Field", "SpecSchema", "example_text", "key_problems",
           "render_fields"]

#: the default of a field that must be given
REQUIRED = "required"
#: width of the meaning lines of `render_fields`
MEANING_WIDTH = 88


@dataclass(frozen=True)
class Field:
    """One field of a spec file: its name, type, default, limit and meaning, and for a mapping
    (or a list of mappings) the fields inside it.

    Parameters
    ----------
    name : str
        The key as written in the spec; ``<axis>`` stands for any name the spec chooses (the
        axes of a sweep family).
    type : str
        The type in words ("d×d matrix", "float > 0", "one of exact, rk, auto").
    default : str, optional
        The value used when the field is absent, in words; `REQUIRED` (the default) when it
        must be given.
    limit : str, optional
        The constraint beyond the type ("1 ≤ n_layers ≤ 100000 (cli.MAX_LAYERS)"); empty when
        the type says it all.
    meaning : str, optional
        One line: what the field sets.
    fields : tuple of Field, optional
        The fields of a mapping-valued field (empty for a scalar, vector or matrix).
    repeated : bool, optional
        The value is a list of such mappings (shown as ``name[].field``).

    Raises
    ------
    TypeError
        For a missing or unknown argument, as any dataclass; the values are not validated
        (tests/test_specs.py checks the schemas against the loaders).

    See Also
    --------
    SpecSchema : the fields of one subcommand.
    render_fields : the table of the fields.

    References
    ----------
    .. [1] riccati_tf README, "Command line" (the spec files of each subcommand).

    Examples
    --------
    >>> from riccati_tf.app.specs import Field
    >>> tau = Field("tau", "float > 0", meaning="step τ of the residual layers")
    >>> tau.default, tau.fields
    ('required', ())
    """

    name: str
    type: str
    default: str = REQUIRED
    limit: str = ""
    meaning: str = ""
    fields: tuple[Field, ...] = ()
    repeated: bool = False


@dataclass(frozen=True)
class SpecSchema:
    """The spec file of one subcommand: its top-level fields, in the order documented.

    Parameters
    ----------
    command : str
        The subcommand (``riccati-tf COMMAND SPEC``).
    fields : tuple of Field
        The top-level fields.
    note : str, optional
        One sentence on how fields combine ("give params or schedule, not both").

    Raises
    ------
    TypeError
        As `Field`.

    See Also
    --------
    Field : one field.
    SCHEMAS : the schema of every subcommand that reads a spec.

    References
    ----------
    .. [1] riccati_tf README, "Command line".

    Examples
    --------
    >>> from riccati_tf.app.specs import SCHEMAS
    >>> SCHEMAS["certify"].names
    ('params', 'initial')
    """

    command: str
    fields: tuple[Field, ...]
    note: str = ""

    @property
    def names(self) -> tuple[str, ...]:
        """The top-level keys the subcommand accepts."""
        return tuple(f.name for f in self.fields)


# --- shared pieces -----------------------------------------------------------------------------

_DIM = "d ≤ 64 (spec.MAX_DIM)"


def _matrix(name: str, meaning: str, default: str = "0") -> Field:
    return Field(name, "d×d matrix", default, _DIM, meaning)


_HEAD_FIELDS = (_matrix("V", "value matrix V_h of the head", REQUIRED),
                _matrix("B", "query–key matrix B_h of the head", REQUIRED))
_PARAMS_FIELDS = (
    _matrix("A", "feed-forward (skip) matrix: the field is A x + b + attention"),
    _matrix("B", "query–key matrix of the single head (attention weights softmax ⟨Bx, y⟩)"),
    _matrix("V", "value matrix of the single head"),
    Field("b", "vector of length d", "0", _DIM, "bias"),
    Field("heads", "list of mappings", "one head: V and B", "1 to 32 (spec.MAX_HEADS) heads",
          "several attention heads, instead of V and B", _HEAD_FIELDS, repeated=True))
_GAUSSIAN_FIELDS = (Field("mean", "vector of length d", REQUIRED, _DIM, "mean m"),
                    Field("cov", "d×d matrix", REQUIRED, "symmetric positive semidefinite; "
                          + _DIM, "covariance Σ"))


def _params(meaning: str, default: str = REQUIRED) -> Field:
    return Field("params", "mapping", default, "", meaning, _PARAMS_FIELDS)


def _gaussian(name: str, meaning: str) -> Field:
    return Field(name, "mapping", REQUIRED, "", meaning, _GAUSSIAN_FIELDS)


_INITIAL = _gaussian("initial", "the initial Gaussian N(m0, Σ0) of the tokens")
_LARGEST_RESULT = "(states)·(d + d²) ≤ 2000000 (cli.MAX_OUTPUT)"

_TRACKING_FIELDS = (
    _matrix("K", "rate of the tracked moments: ṁ = K m + b̄, Σ̇ = KΣ + ΣKᵀ", REQUIRED),
    _matrix("A", "feed-forward matrix, constant on the piece", REQUIRED),
    _matrix("V", "value matrix, constant on the piece", REQUIRED),
    _matrix("R", "query–key factor: B(t) = Σ(t)⁺ R", REQUIRED),
    Field("L_start", "d×r matrix (r ≤ d)", REQUIRED, _DIM, "factor of Σ at the piece's start: "
          "Σ = L Lᵀ"),
    Field("m_start", "vector of length d", REQUIRED, _DIM, "mean at the piece's start"),
    Field("b_path", "vector of length d", REQUIRED, _DIM, "drift b̄ of the tracked mean"))
_SCHEDULE_FIELDS = (
    Field("t_start", "float", "previous t_end (0 first)",
          "equal to the previous piece's t_end", "start of the piece"),
    Field("t_end", "float", REQUIRED, "greater than t_start; the last piece's equals t_final",
          "end of the piece"),
    _params("constant layer on the piece (give params or tracking)", "—"),
    Field("tracking", "mapping", "—", "",
          "tracking attention B(t) = Σ(t)⁺R of a steer plan (give params or tracking)",
          _TRACKING_FIELDS))

# --- the sweep family (read by riccati_tf.sweep.family) ----------------------------------------

_AFFINE = " (affine)"
_RANGE = "list [low, high], low < high"
_SWEEP_HEAD_FIELDS = (
    Field("B", "d×d matrix" + _AFFINE, "0", "", "query–key matrix of the head"),
    Field("V", "d×d matrix" + _AFFINE, "0", "", "value matrix of the head"),
    Field("v", "number" + _AFFINE, "—", "give V or v",
          "deprecated: V = v I (write V: {axis: identity matrix})"))
_SWEEP_PARAMS_FIELDS = (
    Field("A", "d×d matrix" + _AFFINE, "0", "", "feed-forward matrix"),
    *_SWEEP_HEAD_FIELDS,
    Field("b", "vector of length d" + _AFFINE, "0", "", "bias"),
    Field("heads", "list of mappings", "one head: B and V or v",
          "instead of B, V and v", "several attention heads", _SWEEP_HEAD_FIELDS,
          repeated=True))
_GRID_AXIS = Field(
    "<axis>", "list or mapping", REQUIRED,
    "at most 1000000 (family.MAX_AXIS_POINTS) points",
    "grid values of the axis (the name is any identifier but const)",
    (Field("values", "list of numbers", "—", "non-empty", "the points"),
     Field("linspace", "list [start, stop, num]", "—", "num ≥ 1", "num equally spaced points"),
     Field("geomspace", "list [start, stop, num]", "—", "start, stop > 0; num ≥ 1",
           "num geometrically spaced points")))
_RANDOM_AXIS = Field(
    "<axis>", "mapping", REQUIRED, "exactly one of uniform, loguniform",
    "distribution of the axis (the name is any identifier but const)",
    (Field("uniform", _RANGE, "—", "finite", "uniform on [low, high]"),
     Field("loguniform", _RANGE, "—", "low > 0", "log-uniform on [low, high]")))
_FAMILY_FIELDS = (
    Field("grid", "mapping", "—", "at most 10^12 (family.MAX_CONFIGS) "
          "configurations", "Cartesian product of the axes (give grid or random)",
          (_GRID_AXIS,)),
    Field("random", "mapping", "—", "",
          "n random configurations (give grid or random)",
          (Field("n", "integer", REQUIRED, "1 ≤ n ≤ 10^12 (family.MAX_CONFIGS)",
                 "configurations drawn"),
           Field("seed", "integer", "0", "≥ 0", "random seed"),
           Field("axes", "mapping", REQUIRED, "non-empty",
                 "the axes and their distributions", (_RANDOM_AXIS,)))))

# --- the schemas -----------------------------------------------------------------------------

#: the spec of each subcommand that reads one, by subcommand name
SCHEMAS: dict[str, SpecSchema] = {schema.command: schema for schema in (
    SpecSchema("derive", (
        Field("d", "integer", REQUIRED, "1 ≤ d ≤ 64 (spec.MAX_DIM)", "dimension of the tokens"),
        Field("heads", "integer", "1", "1 ≤ heads ≤ 32 (spec.MAX_HEADS)", "attention heads"),
        Field("kernel", "one of dot, l2", "dot", "",
              "dot: softmax of ⟨Bx, y⟩; l2: softmax of −|Qx − Ky|²/2 (B = KᵀQ)"),
        Field("ffn", "one of affine, relu", "affine", "",
              "feed-forward term: A x + b, or with W relu(Ux + c) (a Gaussian closure)"))),
    SpecSchema("flow", (
        _params("the layer, constant in depth", "— (or schedule)"),
        Field("schedule", "list of mappings", "— (or params)",
              "at most 1000 (schedule.MAX_SCHEDULE) pieces",
              "piecewise layers on consecutive depth intervals (the plan of steer --json)",
              _SCHEDULE_FIELDS, repeated=True),
        _INITIAL,
        Field("t_final", "float > 0", REQUIRED, "", "depth at which the flow ends"),
        Field("t_eval", "list of floats", "101 (flows.DEFAULT_OUTPUTS) times",
              "increasing, in [0, t_final]; at most 10000 (cli.MAX_T_EVAL) times; "
              + _LARGEST_RESULT, "output times (default: equally spaced in [0, t_final])"),
        Field("method", "one of auto, exact, rk", "auto",
              "exact: constant params with value matrices V_h = v_h I",
              "exact (Riccati solution) or rk (DOP853); auto: exact when the value matrices "
              "are scalar"),
        Field("rtol", "float", "1e-10", "0 < rtol < 1", "relative tolerance of rk"),
        Field("atol", "float", "1e-12", "0 < atol < 1", "absolute tolerance of rk")),
        "give params or schedule, not both"),
    SpecSchema("layers", (
        _params("the layer, repeated n_layers times", "— (or layers)"),
        Field("layers", "list of mappings", "— (or params)",
              "exactly n_layers of them", "one layer's params per layer", _PARAMS_FIELDS,
              repeated=True),
        _INITIAL,
        Field("n_layers", "integer", REQUIRED, "1 ≤ n_layers ≤ 100000 (cli.MAX_LAYERS); "
              + _LARGEST_RESULT, "number of discrete residual layers"),
        Field("tau", "float > 0", REQUIRED, "", "step τ of the layers x⁺ = x + τ X(x)")),
        "give params or layers, not both"),
    SpecSchema("equilibria", (
        _params("the time-invariant layer"),
        Field("which", "one of stable, all", "stable",
              "all: A without repeated eigenvalues; with scalar value matrices "
              "d ≤ 10 (equilibria.ENUMERATION_MAX_D)",
              "the stable equilibrium, or one per invariant subspace of A"))),
    SpecSchema("certify", (_params("the time-invariant layer"), _INITIAL)),
    SpecSchema("steer", (
        _gaussian("start", "the Gaussian to steer from"),
        _gaussian("target", "the Gaussian to reach (same covariance rank as start)"),
        Field("t_final", "float > 0", "required (or T)", "", "depth at which target is reached"),
        Field("T", "float > 0", "—", "give t_final or T, not both", "older name of t_final"),
        Field("controls", "one of the controls below", "affine",
              "d ≤ 8 (cli.STEER_MAX_DIM) for affine, full, attention; "
              "d ≤ 3 (cli.STEER_SHOOTING_MAX_DIM) otherwise",
              "which parameters may vary in depth"))),
    SpecSchema("design", (
        _gaussian("target", "the Gaussian N(m*, Σ*) the designed layer attracts (Σ* of rank ≥ 1)"),
        Field("v", "number or list of numbers", "-1", "< 0; one for all heads or one per head",
              "value scalars v_h of the heads: V_h = v_h I"),
        Field("heads", "integer", "the number of v's or of B's, else 1",
              "1 ≤ heads ≤ 32 (spec.MAX_HEADS); equal to the number of v's and of B's given",
              "attention heads"),
        Field("B", "d×d matrix or list of them", "from gain and scale",
              "one matrix (one head) or one per head; G = −Σ_h v_h (B_h + B_hᵀ) ≻ 0 "
              "(⪰ 0 and ≻ 0 on range Σ* for a singular target); " + _DIM,
              "query–key matrices B_h (instead of gain and scale)"),
        Field("criterion", "one of min_norm, closest", "min_norm",
              "closest needs A0; A0 is used by closest only",
              "how the free skew part K of A is chosen: least ‖A‖_F, or least ‖A − A0‖_F"),
        Field("A0", "d×d matrix", "—", "only with criterion closest; " + _DIM,
              "the matrix A should be closest to"),
        Field("gain", "one of precision, identity", "precision", "not with B",
              "G when B is not given: scale · Σ*⁻¹ (rank k: Σ*⁺ + (I − Π)/λ_max), or scale · I"),
        Field("scale", "float > 0", "1", "not with B",
              "the factor of G (with gain precision: the covariance's decay rate)"),
        Field("rank", "integer", "the numerical rank of target.cov",
              "1 ≤ rank ≤ the numerical rank of target.cov",
              "design for the best rank-`rank` approximation of Σ*"),
        Field("starts", "integer", "5", "1 ≤ starts ≤ 20 (cli.DESIGN_MAX_STARTS)",
              "random full-rank starts whose flows are drawn landing on the target"),
        Field("seed", "integer", "0", "0 ≤ seed ≤ 2^63−1 (validation.MAX_SEED)",
              "random seed of the starts"),
        Field("horizon", "float > 0", "40 (cli.DESIGN_HORIZON_RATES) / min(rate, mean_rate)",
              "≤ 10000 (cli.DESIGN_MAX_HORIZON), the default capped there too",
              "depth up to which the flows are integrated (rate, mean_rate: the design's decay "
              "rates)"),
        Field("repair", "mapping", "—", "",
              "a layer to move into a certified regime by the least change "
              "(riccati_tf.design.repair.nearest_stable), reported with the design", (
                  _params("the layer to repair"),
                  _INITIAL,
                  Field("change", "one of B, V, A", "B", "",
                        "which matrices change: the query–key B_h, the values V_h or A")))),
        "the layer is A, b, V_h = v_h I, B_h (riccati_tf.design.target.attracting_layer); "
        "--out DIR receives design.html and design.json"),
    SpecSchema("particles", (
        _params("the layer, constant in depth"),
        _INITIAL,
        Field("n_tokens", "integer", REQUIRED, "2 ≤ n_tokens ≤ 100000 (cli.MAX_TOKENS); "
              "n_tokens²·n_steps·heads ≤ 10^9 (cli.MAX_PARTICLE_WORK)",
              "tokens drawn from initial"),
        Field("seed", "integer", "0", "0 ≤ seed ≤ 2^63−1 (validation.MAX_SEED)",
              "random seed of the draw"),
        Field("t_final", "float > 0", REQUIRED, "", "depth at which the simulation ends"),
        Field("n_steps", "integer", REQUIRED, "1 ≤ n_steps ≤ 100000 (cli.MAX_STEPS); "
              + _LARGEST_RESULT, "fixed steps of length t_final / n_steps"),
        Field("method", "one of rk4, euler", "rk4", "", "the fixed-step integrator"))),
    SpecSchema("sweep", (
        Field("analysis", "one of certify, flow, particles", "certify", "",
              "what is computed for every configuration"),
        Field("family", "mapping", REQUIRED, "exactly one of grid, random",
              "the named scalar axes and their values", _FAMILY_FIELDS),
        Field("chunk_size", "integer", "1000 (family.DEFAULT_CHUNK)", "≥ 1; at most 1000000 "
              "(family.MAX_CHUNKS) chunks", "configurations per chunk (one Parquet file each)"),
        Field("params", "mapping", REQUIRED, _DIM,
              "the layer, affine in the axes", _SWEEP_PARAMS_FIELDS),
        Field("initial", "mapping", REQUIRED, "", "the initial Gaussian",
              (Field("mean", "vector of length d" + _AFFINE, "0", "", "mean m0"),
               Field("cov", "d×d matrix" + _AFFINE, REQUIRED,
                     "symmetric; positive semidefinite at every corner of the axes' box",
                     "covariance Σ0"))),
        Field("t_final", "float > 0", "required (flow, particles)", "",
              "depth at which flow and particles end (unused by certify)"),
        Field("particles", "mapping",
              "required for particles", "", "the particle simulation",
              (Field("n_tokens", "integer", REQUIRED,
                     "2 ≤ n_tokens ≤ 100000 (family.MAX_TOKENS)", "tokens per configuration"),
               Field("n_steps", "integer", REQUIRED, "1 ≤ n_steps ≤ 100000 (family.MAX_STEPS)",
                     "fixed steps"),
               Field("seed", "integer", "0", "≥ 0", "random seed"))),
        Field("plot", "mapping", "the first two axes", "axis names of the family",
              "axes of the phase diagram (--plot, sweep-plot)",
              (Field("x", "axis name", "the first axis", "", "horizontal axis"),
               Field("y", "axis name", "the second axis, if any", "",
                     "vertical axis")))),
        "the fields marked (affine) are affine in the axes: a literal X0, or a mapping "
        "{const: X0, <axis>: X_axis, ...} meaning X0 + Σ axis·X_axis"),
)}


def _rows(fields: tuple[Field, ...], prefix: str = "") -> Iterator[tuple[str, Field]]:
    """(displayed name, field) of every field, depth first (``params.A``, ``heads[].V``)."""
    for f in fields:
        name = prefix + f.name
        yield name, f
        yield from _rows(f.fields, name + ("[]." if f.repeated else "."))


def key_problems(schema: SpecSchema, spec: object) -> list[str]:
    """Every unknown and every missing required key of a spec, at every level the schema
    describes (``initial.covv: unknown field; did you mean 'cov'?``, ``t_final: missing
    field``): the command line reports them all at once, not the first alone.

    A mapping is checked where the spec holds one (a list of them for a repeated field); a
    level whose fields include ``<axis>`` takes any key. Values are not checked here: the
    subcommand's parser does that, one field at a time.

    Parameters
    ----------
    schema : SpecSchema
        The subcommand's schema.
    spec : object
        The spec as loaded (`riccati_tf.io.spec.load_spec`).

    Returns
    -------
    list of str
        One message per problem, in the order of the spec's keys and then the schema's fields;
        empty when every key is known and every required one given.

    Raises
    ------
    TypeError
        When a key of the spec is not hashable against the schema's names (a loaded spec's
        keys are strings); a value of the wrong kind (a list where a mapping belongs) is no
        key problem and is left to the parser, which names the field.

    See Also
    --------
    riccati_tf.io.spec.check_keys : the parsers' own check, level by level, first key only.

    References
    ----------
    .. [1] riccati_tf README, "Command line" (the spec files of each subcommand).

    Examples
    --------
    >>> from riccati_tf.app.specs import SCHEMAS, key_problems
    >>> spec = {"params": {"A": [[0]], "Bq": 1}, "initial": {"mean": [0], "covv": 1}}
    >>> for problem in key_problems(SCHEMAS["certify"], spec):
    ...     print(problem)
    params.Bq: unknown field; did you mean 'B'?
    initial.covv: unknown field; did you mean 'cov'?
    initial.cov: missing field
    """
    def check(fields: tuple[Field, ...], value: object, where: str) -> list[str]:
        if not isinstance(value, dict) or any(f.name == "<axis>" for f in fields):
            return []
        known = {f.name: f for f in fields}
        out = unknown_keys(value, known, where)
        out += [f"{where}{f.name}: missing field" for f in fields
                if f.default == REQUIRED and f.name not in value]
        for name, f in known.items():
            if f.fields and name in value:
                items = value[name] if f.repeated and isinstance(value[name], list) else \
                    [value[name]]
                for i, item in enumerate(items):
                    at = f"{where}{name}[{i}]." if f.repeated else f"{where}{name}."
                    out += check(f.fields, item, at)
        return out
    return check(schema.fields, spec, "")


def render_fields(schema: SpecSchema) -> str:
    """The fields of a spec as a text table: one row per field (nested fields as dotted
    names) with its type and default, then its meaning and its limit on indented lines.

    Parameters
    ----------
    schema : SpecSchema
        The spec of one subcommand.

    Returns
    -------
    str
        The table, headed by a line naming ``riccati-tf COMMAND --example``; the epilog of the
        subcommand's ``--help`` (and so of the documentation's command-line reference).

    Raises
    ------
    AttributeError
        If `schema` is not a SpecSchema.

    See Also
    --------
    SCHEMAS : the schemas.
    riccati_tf.app.cli.build_parser : puts the table under each subcommand's help.

    References
    ----------
    .. [1] riccati_tf README, "Command line".

    Examples
    --------
    >>> from riccati_tf.app.specs import SCHEMAS, render_fields
    >>> print(render_fields(SCHEMAS["certify"]))
    spec fields (JSON or YAML; riccati-tf certify --example prints a complete spec):
      field             type                default
      params            mapping             required
          the time-invariant layer
      params.A          d×d matrix          0
          feed-forward (skip) matrix: the field is A x + b + attention
          limit: d ≤ 64 (spec.MAX_DIM)
    ...
      initial.cov       d×d matrix          required
          covariance Σ
          limit: symmetric positive semidefinite; d ≤ 64 (spec.MAX_DIM)
    """
    rows = list(_rows(schema.fields))
    widths = [max(len(text) for text in column) for column in
              zip(("field", "type"), *((name, f.type) for name, f in rows), strict=False)]
    lines = [f"spec fields (JSON or YAML; riccati-tf {schema.command} --example prints a "
             f"complete spec):",
             f"  {'field':<{widths[0]}}  {'type':<{widths[1]}}  default"]
    for name, f in rows:
        lines.append(f"  {name:<{widths[0]}}  {f.type:<{widths[1]}}  {f.default}")
        for about in (f.meaning, f"limit: {f.limit}" if f.limit else ""):
            lines += textwrap.wrap(about, MEANING_WIDTH, initial_indent=" " * 6,
                                   subsequent_indent=" " * 8, break_on_hyphens=False)
    if schema.note:
        lines += textwrap.wrap(f"({schema.note})", MEANING_WIDTH, initial_indent="  ",
                               subsequent_indent="   ")
    return "\n".join(lines)


def example_text(command: str) -> str:
    """The example spec of a subcommand, as shipped: the text of ``example_specs/COMMAND.yaml``
    in this package (what ``riccati-tf COMMAND --example`` prints).

    Parameters
    ----------
    command : str
        A subcommand of `SCHEMAS`.

    Returns
    -------
    str
        YAML text: a complete, valid spec that runs in a few seconds.

    Raises
    ------
    KeyError
        If `command` reads no spec (it is not in `SCHEMAS`).

    See Also
    --------
    SCHEMAS : the fields the example fills in.

    References
    ----------
    .. [1] "YAML Ain't Markup Language (YAML) version 1.2", revision 1.2.2, 2021.

    Examples
    --------
    >>> from riccati_tf.app.specs import example_text
    >>> print(example_text("certify"))
    # riccati-tf certify certify.yaml
    ...
    """
    schema = SCHEMAS[command]
    folder = resources.files("riccati_tf.app") / "example_specs"
    return (folder / f"{schema.command}.yaml").read_text(encoding="utf-8")
