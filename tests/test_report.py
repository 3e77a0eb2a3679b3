"""The main job writes a self-contained page and a summary with the numbers it shows."""

import json

import numpy as np

from riccati_tf.cli import main
from riccati_tf.examples import regime_examples
from riccati_tf.flows import flow


def test_quick_report(tmp_path, capsys):
    assert main(["report", "--quick", "--out", str(tmp_path)]) == 0
    assert str(tmp_path.resolve()) in capsys.readouterr().out
    page = (tmp_path / "index.html").read_text()
    summary = json.loads((tmp_path / "summary.json").read_text())
    regimes = summary["regimes"]
    assert {r["status"] for r in regimes.values()} == {"completed", "blowup"}
    for name in ("converges", "collapses", "blows_up"):
        png = (tmp_path / f"regime_{name}.png").read_bytes()
        assert png[:4] == b"\x89PNG"
        assert f"regime_{name}.png" in page and "data:image/png;base64," in page
        assert regimes[name]["exact_vs_rk_rel_diff"] < 1e-6
    # the numbers on the page are the library's numbers
    params, g0, horizon = regime_examples()["blows_up"]
    assert np.isclose(regimes["blows_up"]["blowup_time"], flow(params, g0, horizon).blowup_time,
                      rtol=1e-12)
    conv = regimes["converges"]["final_cov_eigenvalues"]
    coll = regimes["collapses"]["final_cov_eigenvalues"]
    assert min(conv) > 0.1 and max(coll) < 1e-2
    assert np.isclose(regimes["blows_up"]["blowup_time"], regimes["blows_up"]["blowup_time_rk"],
                      rtol=1e-7)
