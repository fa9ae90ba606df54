"""The design card's report read as a reader would: opened in Chromium at 1400×900, its findings
(the fastest drafter and its speedup) are on the first screen, without scrolling, and the shared
conditions are folded."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
PROBE = """<script>
addEventListener("load", () => {
  const findings = document.getElementById("findings");
  const list = findings && findings.nextElementSibling;
  const shared = document.querySelector("details");
  document.body.dataset.findingsBottom = list ? Math.round(list.getBoundingClientRect().bottom) : -1;
  document.body.dataset.viewport = innerWidth + "x" + innerHeight;
  document.body.dataset.sharedOpen = shared ? String(shared.open) : "none";
});
</script>"""


@pytest.mark.slow
def test_the_findings_are_on_the_first_screen(tmp_path: Path) -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (scripts/test installs it)")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "specexp",
            "-m",
            "drafter=mtp,dspark",
            "k=3,8,15",
            f"hydra.sweep.dir={tmp_path / 'sweep'}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "sweep" / "report.html").read_text(encoding="utf-8")
    findings = html.split('<h2 id="findings">', 1)[1].split("</ul>", 1)[0]
    assert re.search(r"fastest <code>dspark</code> k=8, <strong>\d\.\d\d×</strong>", findings), (
        findings
    )
    probed = tmp_path / "probed.html"
    probed.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    common = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--hide-scrollbars",
        "--proxy-server=http://127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
        "--window-size=1400,900",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=10000",
    ]
    dom = subprocess.run(
        [*common, "--dump-dom", probed.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    body = re.search(r"<body([^>]*)>", dom)
    assert body, dom[:500]
    attrs = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', body.group(1)))
    width, height = map(
        int, attrs["viewport"].split("x")
    )  # a 1400x900 window, less Chromium's own frame
    assert width == 1400 and 700 <= height <= 900, attrs
    assert 0 < int(attrs["findings-bottom"]) <= height, attrs  # the whole list, above the fold
    assert attrs["shared-open"] == "false"  # the 20-odd shared conditions: folded
    shot = tmp_path / "first-screen.png"
    subprocess.run(
        [*common, f"--screenshot={shot}", probed.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.stat().st_size > 10_000  # a rendered page, kept beside the test's records
