"""The report opened in headless Chromium: every figure decodes, every equation lays out, and a
screenshot is not blank. (`make test` installs chromium-headless-shell when it can.)"""

import re
import shutil
import subprocess

import numpy as np
import pytest

from riccati_tf.report import write_report

BROWSER = next((shutil.which(b) for b in ("chromium-headless-shell", "chromium", "chromium-browser")
                if shutil.which(b)), None)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.mark.skipif(BROWSER is None, reason="no headless Chromium on this machine")
def test_report_renders_in_headless_chromium(tmp_path):
    import matplotlib.image as mpimg

    page = write_report(tmp_path / "report", quick=True)
    profile = ["--user-data-dir=" + str(tmp_path / "profile")]
    dom = subprocess.run([BROWSER, *FLAGS, *profile, "--virtual-time-budget=3000", "--dump-dom",
                          page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    counts = {k: int(v) for k, v in re.findall(r'data-([a-z-]+)="(\d+)"', dom.split(">", 2)[1])}
    assert counts["figures-total"] >= 3
    assert counts["figures-loaded"] == counts["figures-total"]
    assert counts["equations-total"] >= 1
    assert counts["equations-rendered"] == counts["equations-total"]
    shot = tmp_path / "shot.png"
    subprocess.run([BROWSER, *FLAGS, *profile, "--window-size=1200,1600",
                    f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120)
    pixels = mpimg.imread(shot)
    assert pixels.shape[0] >= 1000 and np.std(pixels) > 0.05
