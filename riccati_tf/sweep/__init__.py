"""Parameter sweeps at scale (SPEC §5 over families of layers): batched scalar-V classification,
chunked Parquet results that resume exactly, in-process or Dask execution, phase diagrams.

    run_sweep(spec, out_dir, *, scheduler=None, n_workers=None, progress=None) -> SweepResult
    plot_sweep(results_path, out_png) -> Path
    classify_scalar(A, G, cov0) -> BatchedCertificates     (certify's theorem branches, stacked)

pyarrow, dask and distributed are imported only inside the functions that need them; importing
this package (or riccati_tf) never imports them.
"""

from typing import TYPE_CHECKING

from ..lazy import attach

if TYPE_CHECKING:
    from .batched import BatchedCertificates, blowup_times, classify_scalar, van_loan_stack
    from .family import Family, parse_family
    from .plot import phase_diagram, plot_sweep
    from .report import report_section
    from .runner import SweepResult, certify_columns, compute_chunk, run_sweep
    from .store import read_results

__all__ = ["BatchedCertificates", "Family", "SweepResult", "blowup_times", "certify_columns",
           "classify_scalar", "compute_chunk", "parse_family", "phase_diagram", "plot_sweep",
           "read_results", "report_section", "run_sweep", "van_loan_stack"]

# loaded on first use: the command line's sweep options import this package
__getattr__, __dir__ = attach(__name__, {
    **dict.fromkeys(["BatchedCertificates", "blowup_times", "classify_scalar", "van_loan_stack"],
                    ".batched"),
    "Family": ".family", "parse_family": ".family", "phase_diagram": ".plot",
    "plot_sweep": ".plot", "report_section": ".report", "read_results": ".store",
    **dict.fromkeys(["SweepResult", "certify_columns", "compute_chunk", "run_sweep"], ".runner")})
