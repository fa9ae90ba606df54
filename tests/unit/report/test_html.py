"""The HTML report: server text arrives escaped, and every chart renders offline in Chromium."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specexp.record import find_records
from specexp.report.build import build_report
from specexp.report.markdown import render_markdown
from specexp.report.render import render_html, write_charts, write_html

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "records"
REPO = Path(__file__).resolve().parents[3]
HOSTILE = (
    '<script>alert("x")</script> | `tick` [click](javascript:alert(1)) <img src=x onerror=alert(2)>'
)


def _records_with_hostile_server_text(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "refused", tmp_path / "refused")
    path = next((tmp_path / "refused").rglob("result.json"))
    record = json.loads(path.read_text())
    record["error"] = {
        "kind": "server_exited",
        "message": HOSTILE,
        "log_tail": HOSTILE + "\n```\n</script>",
    }
    record["conditions"]["runtime_version"] = HOSTILE
    path.write_text(json.dumps(record))
    shutil.copytree(FIXTURES / "simulated", tmp_path / "simulated")
    return tmp_path


def test_server_text_is_escaped_in_html(tmp_path: Path) -> None:
    root = _records_with_hostile_server_text(tmp_path)
    html = render_html(build_report(find_records([root]), root))
    body = html.split("<body>", 1)[1].split("<script>", 1)[
        0
    ]  # the page before specexp's own scripts
    assert (
        "<script" not in body
        and "<img" not in body
        and "javascript:" not in body.replace("javascript:alert", "")
    )
    assert "&lt;script&gt;alert" in body
    assert 'href="javascript:' not in html


@pytest.mark.parametrize("hostile", [False, True])
def test_tables_rendered_cell_by_cell_are_markdown_its_own(tmp_path: Path, hostile: bool) -> None:
    """The HTML report renders its tables cell by cell (thousands of rows): what it gives is what
    markdown-it gives for the whole measurements.md, hostile server text and the studies' links,
    code spans and bold included."""
    from markdown_it import MarkdownIt

    from specexp.report.render import markdown_body

    roots = (
        [_records_with_hostile_server_text(tmp_path)]
        if hostile
        else [
            FIXTURES,
            REPO / "reports" / "cpu_real_pair",
            REPO / "reports" / "spark_fp8_mtp_dspark",
        ]
    )
    markdown = MarkdownIt("commonmark", {"html": False}).enable("table")
    for root in roots:
        report = build_report(find_records([root]), root)
        assert "<table>" in markdown_body(report)
        assert markdown_body(report) == markdown.render(render_markdown(report)), root


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "a",
                "Z",
                "9",
                "_",
                "__",
                " ",
                "`",
                "[",
                "]",
                "(",
                ")",
                "/",
                ".",
                "=",
                ",",
                "*",
                "<",
                "&",
                '"',
                "'",
                "é",
                "\\",
                "!",
                "#",
                "-",
                "x_y",
                "[`id`](p/r.json)",
            ]
        ),
        max_size=12,
    ).map("".join)
)
def test_a_cell_rendered_without_markdown_it_is_what_markdown_it_renders(text: str) -> None:
    from markdown_it import MarkdownIt

    from specexp.report.render import _inline

    markdown = MarkdownIt("commonmark", {"html": False}).enable("table")
    fast = _inline(markdown, text.strip())
    assert fast is None or fast == markdown.renderInline(text.strip())


def test_server_text_cannot_break_a_markdown_table(tmp_path: Path) -> None:
    root = _records_with_hostile_server_text(tmp_path)
    text = render_markdown(build_report(find_records([root]), root))
    header = next(line for line in text.splitlines() if line.startswith("| run | status |"))
    row = next(
        line for line in text.splitlines() if "server_exited" in line and line.startswith("|")
    )

    def unescaped(line):
        return len(re.findall(r"(?<!\\)\|", line))

    assert unescaped(row) == unescaped(header)
    # the log tail stays inside its fence: a ``` from the server cannot close it
    fence = text.split("```text\n", 1)[1].split("\n```", 1)[0]
    assert "</script>" in fence and "```" not in fence


class _Charts(HTMLParser):
    """Collects, for every chart container, whether an <svg> was drawn inside it."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str | None] = []
        self.drawn: dict[str, bool] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        ident = dict(attrs).get("id") or ""
        current = ident if ident.startswith("chart-") else (self.stack[-1] if self.stack else None)
        if ident.startswith("chart-"):
            self.drawn.setdefault(ident, False)
        if tag == "svg" and current:
            self.drawn[current] = True
        if tag not in {
            "img",
            "br",
            "hr",
            "meta",
            "link",
            "input",
            "path",
            "rect",
            "line",
            "circle",
        }:
            self.stack.append(current)

    def handle_endtag(self, tag: str) -> None:
        if self.stack and tag not in {"img", "br", "hr", "meta", "link", "input"}:
            self.stack.pop()


@pytest.mark.slow
@pytest.mark.parametrize("shared", [False, True], ids=["inlined", "shared-copy"])
def test_every_chart_renders_in_headless_chromium_without_network(
    tmp_path: Path, shared: bool
) -> None:
    """Inlined, or loaded from one copy beside a folder of reports (`--vega-script`, as reports/
    does), the charts' scripts draw every chart with no network."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (scripts/test installs it)")
    root = tmp_path / "records"
    for folder in ("simulated", "measured"):
        shutil.copytree(FIXTURES / folder, root / folder)
    report = build_report(find_records([root]), tmp_path)
    assert len(report.charts) >= 2
    if shared:
        done = subprocess.run(
            [sys.executable, "-m", "specexp.report", "--write-vega-script", str(tmp_path / "v.js")],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        (tmp_path / "page").mkdir()
        page = write_html(report, tmp_path / "page" / "report.html", vega_script="../v.js")
        html = page.read_text()
        assert '<script src="../v.js"></script>' in html and len(html) < 200_000
    else:
        page = write_html(report, tmp_path / "report.html")
    dom = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-sync",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-quic",
            "--proxy-server=http://127.0.0.1:9",
            "--proxy-bypass-list=<-loopback>",  # no network at all
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=10000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    parser = _Charts()
    parser.feed(dom)
    assert parser.drawn == {f"chart-{c.name}": True for c in report.charts}


def test_markdown_charts_are_svg_files_written_offline(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "simulated", tmp_path / "simulated")
    report = build_report(find_records([tmp_path]), tmp_path)
    paths = write_charts(report, tmp_path / "charts")
    assert paths and all(p.read_text().lstrip().startswith("<svg") for p in paths)
    text = render_markdown(report)
    assert all(f"](charts/{p.name})" in text for p in paths)


def test_report_reads_records_only(tmp_path: Path) -> None:
    """Rendering imports nothing that starts or reaches an engine."""
    code = (
        "import sys, specexp.report.__main__, specexp.report.render;"
        "bad = [m for m in sys.modules if m.startswith('specexp.runtimes')];"
        "print(bad); raise SystemExit(1 if bad else 0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_report_cli_renders_several_folders(tmp_path: Path) -> None:
    from specexp.report.__main__ import main

    for folder in ("simulated", "measured", "refused"):
        shutil.copytree(FIXTURES / folder, tmp_path / folder)
    out = tmp_path / "out" / "measurements.md"
    assert (
        main(
            [
                str(tmp_path / "simulated"),
                str(tmp_path / "measured"),
                str(tmp_path / "refused"),
                "-o",
                str(out),
                "--html",
                str(tmp_path / "out" / "report.html"),
            ]
        )
        == 0
    )
    text = out.read_text()
    assert text.startswith("> **Partly simulated.**")
    assert "refused" in text and (tmp_path / "out" / "report.html").is_file()
    assert main([str(tmp_path / "nowhere")]) == 2


def test_records_are_not_changed_by_rendering(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "simulated", tmp_path / "simulated")
    before = {p: p.read_bytes() for p in tmp_path.rglob("result.json")}
    render_markdown(build_report(find_records([tmp_path]), tmp_path))
    assert before == {p: p.read_bytes() for p in tmp_path.rglob("result.json")}
    assert copy.deepcopy(before) == before


def test_a_run_id_recorded_on_two_nodes_is_reported_not_merged(tmp_path: Path) -> None:
    for node in ("node-a", "node-b"):
        shutil.copytree(FIXTURES / "simulated", tmp_path / node)
    text = render_markdown(build_report(find_records([tmp_path]), tmp_path))
    section = text.split("## Runs recorded more than once", 1)[1].split("\n## ", 1)[0]
    assert "3 run id(s) appear in more than one folder" in section
    lines = section.splitlines()
    assert (
        sum("node-a/" in line for line in lines) == 3
        and sum("node-b/" in line for line in lines) == 3
    )
    decode = text.split("## Decode speed by drafter", 1)[1].split("\n## ", 1)[0]
    assert decode.count("`396bef051673`") == 2  # both copies shown as their own rows


def test_a_broken_citation_is_reported_not_fatal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from specexp.spec import paths

    experiments = tmp_path / "experiments"
    experiments.mkdir()
    (experiments / "study.yaml").write_text(
        "# @package _global_\nexperiment: study\ncitations: [missing.yaml]\n"
    )
    monkeypatch.setattr(paths, "experiments_dir", lambda: experiments)
    shutil.copytree(FIXTURES / "simulated", tmp_path / "runs")
    for path in (tmp_path / "runs").rglob("result.json"):
        record = json.loads(path.read_text())
        record["provenance"]["config"]["experiment"] = "study"
        path.write_text(json.dumps(record))
    text = render_markdown(build_report(find_records([tmp_path / "runs"]), tmp_path))
    section = text.split("## Published figures", 1)[1].split("\n## ", 1)[0]
    assert "could not be read" in section and "missing.yaml" in section


def test_the_vega_bundle_is_built_once_and_only_for_reports_with_charts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from specexp.report import render

    monkeypatch.setenv("SPECEXP_CACHE", str(tmp_path / "cache"))
    render.vega_bundle.cache_clear()
    shutil.copytree(FIXTURES / "refused", tmp_path / "refused")
    no_charts = build_report(find_records([tmp_path / "refused"]), tmp_path)
    assert (
        not no_charts.charts and len(render_html(no_charts)) < 100_000
    )  # the bundle alone is ~900 kB
    assert not (tmp_path / "cache").exists()  # nothing built for a report that draws nothing
    bundle = render.vega_bundle()
    (cached,) = (tmp_path / "cache").glob("vega-bundle-*.js")
    render.vega_bundle.cache_clear()
    assert (
        render.vega_bundle() == bundle == cached.read_text(encoding="utf-8")
        and "</script" not in bundle
    )
    render.vega_bundle.cache_clear()


def test_one_folders_report_lands_beside_its_records_and_says_what_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from specexp.report.__main__ import main

    shutil.copytree(FIXTURES / "simulated", tmp_path / "sweep")
    monkeypatch.chdir(tmp_path)  # nothing may land in the folder the command ran from
    assert main(["sweep"]) == 0
    out = capsys.readouterr().out
    for name in ("measurements.md", "report.html"):
        assert (tmp_path / "sweep" / name).is_file() and f"wrote sweep/{name}" in out
    assert "chart(s) to sweep/charts" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep"]
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert main(["../sweep", "--no-html", "-o", "measurements.md"]) == 0
    assert sorted(p.name for p in (tmp_path / "elsewhere").iterdir()) == [
        "charts",
        "measurements.md",
    ]
    assert main(["../sweep", "--format", "csv", "-o", "table.csv"]) == 0
    assert "wrote" in capsys.readouterr().out.splitlines()[-1]
    assert (tmp_path / "elsewhere" / "table.csv").read_text().count("\n") > 1
