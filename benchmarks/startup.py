"""First calls in a fresh process: what a newcomer waits for before the first answer.

Each case runs in a new Python process (one BLAS thread: OPENBLAS_NUM_THREADS=1,
OMP_NUM_THREADS=1), best of `--repeat` runs; printed: wall time and CPU time (user + system of
the child) and the heavy libraries the process loaded.

- ``import``: ``import riccati_tf``.
- ``certify``: ``import riccati_tf; riccati_tf.certify(<2×2 converging layer>, Σ0)`` (target:
  ≤ 1.5 s wall on an idle machine).
- ``flow``: ``import riccati_tf; riccati_tf.flow(<the same layer>, g, 10)``.
- ``sweep``: ``riccati-tf sweep`` on the ``--example`` spec (10 configurations), into a temporary
  folder, with the default scheduler (target: ≤ 2 s of CPU); ``sweep (core)``: the same with
  pyarrow, dask and distributed made unimportable, as on the core install (npz store).

The wall time depends on how busy the machine is; the CPU time much less.

Run: python -m benchmarks.startup [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LAYER = ("import numpy as np\nimport riccati_tf as rt\n"
         "p = rt.Params(A=0.5 * np.eye(2), B=np.eye(2), V=-1.0 * np.eye(2))\n"
         "g = rt.Gaussian(mean=[1.0, 0.0], cov=[[1.0, 0.3], [0.3, 0.5]])\n")
HEAVY = ("scipy", "sympy", "control", "matplotlib", "torch", "dask", "pyarrow")
REPORT = ("import sys\nprint('loaded:', ' '.join(m for m in "
          f"{HEAVY!r} if m in sys.modules) or '-')\n")
BLOCK = ("import sys\nclass _Block:\n    def find_spec(self, name, path=None, target=None):\n"
         "        if name.split('.')[0] in ('pyarrow', 'dask', 'distributed'):\n"
         "            raise ImportError(name)\nsys.meta_path.insert(0, _Block())\n")
SWEEP = ("from importlib import resources\nfrom riccati_tf.app.cli import main\n"
         "spec = resources.files('riccati_tf.app') / 'example_specs' / 'sweep.yaml'\n"
         "code = main(['sweep', str(spec), '--out', sys.argv[1]])\n")


def cases() -> dict[str, str]:
    """{name: the Python source run in a fresh process}."""
    return {
        "import": "import riccati_tf\n",
        "certify": LAYER + "rt.certify(p, g)\n",
        "flow": LAYER + "rt.flow(p, g, 10.0)\n",
        "sweep": "import sys\n" + SWEEP,
        "sweep (core)": BLOCK + SWEEP,
    }


def run_once(source: str) -> tuple[float, float, str]:
    """(wall s, CPU s of the child, the loaded line) of one fresh process running source."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        run = subprocess.run([sys.executable, "-c", source + REPORT, str(Path(tmp) / "out")],
                             env=env, capture_output=True, text=True, check=True)
        wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, run.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per case")
    args = parser.parse_args()
    print(f"# python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.2f}, best of {args.repeat} fresh processes")
    print(f"{'case':<14}{'wall s':>8}{'CPU s':>8}  heavy libraries loaded")
    for name, source in cases().items():
        runs = [run_once(source) for _ in range(args.repeat)]
        wall, cpu = min(r[0] for r in runs), min(r[1] for r in runs)
        print(f"{name:<14}{wall:8.2f}{cpu:8.2f}  {runs[-1][2]}")


if __name__ == "__main__":
    main()
