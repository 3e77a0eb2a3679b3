"""Command line: `riccati-tf <subcommand> [SPEC] [--json] [--plot FILE] [--debug]`.

Output: a summary per subcommand (aligned tables of the numbers that matter, LaTeX and Unicode
printed as they are), or with --json every number in full as one JSON document. --plot is
offered by the subcommands that draw a figure (PLOTTING). `steer --json` holds the plan as a
flow spec (field `plan`: a piecewise `schedule`) that `riccati-tf flow` replays. Long runs show
tqdm progress bars on stderr when it is a terminal (`experiments.progress_bar`).

Exit codes: 0 success, 2 invalid spec or arguments (one line naming the field or option),
3 numerical failure (a SolverError, one line), 1 a bug (anything unexpected; no user input is
meant to reach it). Tracebacks and warnings only with --debug. A reader that closes stdout early
(`riccati-tf flow spec.json --json | head -c 100`) ends the run quietly with exit 0, as Unix
filters do.

Specs are read by `riccati_tf.io.spec` (strict JSON or YAML 1.2, bounded sizes, unknown keys
refused at every level). Each subcommand's spec is described once, in `app.specs.SCHEMAS`: the
top-level keys it accepts, the table of fields that ends its --help, and the example spec that
`riccati-tf SUBCOMMAND --example` prints. Sizes that decide the cost of a run are bounded
before anything is allocated, by the module constants below (each message names its constant).
Each subcommand that writes files has its own default --out folder, named after it (`prescribed`
→ prescribed/, `design` → design/, ...; `report` → report/), so that a default run never replaces
another command's results. The output of --plot and the folder of --out are checked before the
computation; the result is
printed before the figure is written, so a figure that then cannot be written (a full disk)
still leaves the numbers on stdout, and the exit code is 2 with a line naming the path.

The package: `command` (the parser, `main`, `entry`, `riccati-tf report`), one module per
family of subcommands — `analysis` (flow, layers, derive, equilibria, certify), `steering`
(steer), `design`, `particles` (particles, prescribed, relu-drift), `models` (probe, atlas,
compare); sweep and sweep-plot are `riccati_tf.sweep.cli` — and `common` (what they share:
summaries, exit codes, the output bound). The names below are re-exported here, where the
limits' messages name them (`cli.MAX_T_EVAL`, ...).
"""

from .analysis import MAX_LAYERS as MAX_LAYERS
from .analysis import MAX_T_EVAL as MAX_T_EVAL
from .analysis import certificate_text as certificate_text
from .analysis import cmd_certify as cmd_certify
from .analysis import cmd_derive as cmd_derive
from .analysis import cmd_equilibria as cmd_equilibria
from .analysis import cmd_flow as cmd_flow
from .analysis import cmd_layers as cmd_layers
from .analysis import equilibria_text as equilibria_text
from .analysis import replay as replay
from .command import COMMANDS as COMMANDS
from .command import JSON_OUTPUT as JSON_OUTPUT
from .command import PLOTTING as PLOTTING
from .command import build_parser, main
from .command import cmd_report as cmd_report
from .command import entry as entry
from .common import EXIT_INVALID as EXIT_INVALID
from .common import EXIT_NUMERICAL as EXIT_NUMERICAL
from .common import MAX_OUTPUT as MAX_OUTPUT
from .common import TEXT_WIDTH as TEXT_WIDTH
from .common import Outcome as Outcome
from .common import generic_text as generic_text
from .common import table as table
from .common import trajectory_text as trajectory_text
from .design import DESIGN_ARGUMENTS as DESIGN_ARGUMENTS
from .design import DESIGN_HORIZON_RATES as DESIGN_HORIZON_RATES
from .design import DESIGN_MAX_HORIZON as DESIGN_MAX_HORIZON
from .design import DESIGN_MAX_STARTS as DESIGN_MAX_STARTS
from .design import DESIGN_STARTS as DESIGN_STARTS
from .design import cmd_design as cmd_design
from .design import design_layer as design_layer
from .design import design_options as design_options
from .design import design_text as design_text
from .design import repair_options as repair_options
from .models import MODELS_EXTRA as MODELS_EXTRA
from .models import cmd_atlas as cmd_atlas
from .models import cmd_compare as cmd_compare
from .models import cmd_probe as cmd_probe
from .particles import MAX_PARTICLE_WORK as MAX_PARTICLE_WORK
from .particles import MAX_STEPS as MAX_STEPS
from .particles import MAX_TOKENS as MAX_TOKENS
from .particles import PARTICLES_REFERENCE as PARTICLES_REFERENCE
from .particles import PARTICLES_ROWS as PARTICLES_ROWS
from .particles import PROGRESS_CHUNKS as PROGRESS_CHUNKS
from .particles import PROGRESS_WORK as PROGRESS_WORK
from .particles import cmd_particles as cmd_particles
from .particles import cmd_prescribed as cmd_prescribed
from .particles import cmd_relu_drift as cmd_relu_drift
from .particles import particles_text as particles_text
from .particles import simulate_with_progress as simulate_with_progress
from .steering import REPLAY_ATOL as REPLAY_ATOL
from .steering import REPLAY_RTOL as REPLAY_RTOL
from .steering import STEER_CONSTRUCTIVE as STEER_CONSTRUCTIVE
from .steering import STEER_MAX_DIM as STEER_MAX_DIM
from .steering import STEER_SHOOTING_MAX_DIM as STEER_SHOOTING_MAX_DIM
from .steering import cmd_steer as cmd_steer
from .steering import piece_json as piece_json
from .steering import plan_spec as plan_spec
from .steering import steer_figure as steer_figure
from .steering import steer_text as steer_text

__all__ = ["build_parser", "main"]
