"""Reports read as a reader would: opened in Chromium at 1400×900.

- The design card's sweep: its findings (the fastest drafter and its speedup) are on the first
  screen, without scrolling, and the shared conditions are folded.
- The Spark study: its findings are grouped (a line per workload and conditions, the shared
  condition said once) and start on the first screen, and nothing on the page is wider than the
  window, so it never scrolls sideways.
"""

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
  const top = list ? Array.from(list.children) : [];
  document.body.dataset.findingsTop = list ? Math.round(list.getBoundingClientRect().top) : -1;
  document.body.dataset.findingsBottom = list ? Math.round(list.getBoundingClientRect().bottom) : -1;
  document.body.dataset.onFirstScreen = top.filter(li => li.getBoundingClientRect().top < innerHeight).length;
  document.body.dataset.viewport = innerWidth + "x" + innerHeight;
  document.body.dataset.pageWidth = document.documentElement.scrollWidth;
  document.body.dataset.sharedOpen = shared ? String(shared.open) : "none";
});
</script>"""


def _sweep(tmp_path: Path, *overrides: str) -> str:
    """Run specexp on the simulator into tmp_path; the report.html it wrote."""
    done = subprocess.run(
        [sys.executable, "-m", "specexp", *overrides, f"hydra.sweep.dir={tmp_path / 'sweep'}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return (tmp_path / "sweep" / "report.html").read_text(encoding="utf-8")


def _open(html: str, tmp_path: Path) -> tuple[dict[str, str], int, int]:
    """The page opened in a 1400x900 Chromium window: what the probe read, and the window's inner
    width and height. A screenshot of the first screen is kept beside the test's records."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (scripts/test installs it)")
    head, tail = html.rsplit("</body>", 1)  # the page's own, not one inside an inlined script
    probed = tmp_path / "probed.html"
    probed.write_text(head + PROBE + "</body>" + tail, encoding="utf-8")
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
    width, height = map(int, attrs["viewport"].split("x"))  # less Chromium's own frame
    assert width == 1400 and 700 <= height <= 900, attrs
    shot = tmp_path / "first-screen.png"
    subprocess.run(
        [*common, f"--screenshot={shot}", probed.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.stat().st_size > 10_000  # a rendered page
    return attrs, width, height


@pytest.mark.slow
def test_the_findings_are_on_the_first_screen(tmp_path: Path) -> None:
    html = _sweep(tmp_path, "-m", "drafter=mtp,dspark", "k=3,8,15")
    findings = html.split('<h2 id="findings">', 1)[1].split("</ul>", 1)[0]
    assert re.search(r"fastest <code>dspark</code> k=8, <strong>\d\.\d\d×</strong>", findings), (
        findings
    )
    attrs, width, height = _open(html, tmp_path)
    assert 0 < int(attrs["findings-bottom"]) <= height, attrs  # the whole list, above the fold
    assert attrs["shared-open"] == "false"  # the 20-odd shared conditions: folded
    assert int(attrs["page-width"]) <= width, attrs


@pytest.mark.slow
def test_the_spark_studys_findings_are_grouped_and_the_page_fits_the_window(
    tmp_path: Path,
) -> None:
    html = _sweep(tmp_path, "+experiment=spark_fp8_mtp_dspark")
    md = (tmp_path / "sweep" / "measurements.md").read_text(encoding="utf-8")
    findings = md.split("## Findings\n", 1)[1].split("\n## ", 1)[0]
    top = [x for x in findings.splitlines() if x.startswith("- ")]
    assert top[0] == "- Unless a line says otherwise: gpu_memory_utilization 0.9", top
    assert sum("gpu_memory_utilization" in x for x in top) == 2, top  # said once, and the 0.44 one
    assert sum("fastest by concurrency" in x for x in top) == 2, top  # a line per workload
    attrs, width, height = _open(html, tmp_path)
    assert int(attrs["page-width"]) <= width, attrs  # no sideways scroll
    assert 0 < int(attrs["findings-top"]) < height / 2, attrs
    assert int(attrs["on-first-screen"]) >= 4, attrs  # the rule and the three setups' lines
