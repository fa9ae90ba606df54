"""`python -m specexp.report DIR [DIR ...] [-o measurements.md] [--html report.html | --no-html]`

Renders any set of result folders (several sweeps, several machines) into one report. Reads
records only: no server, no GPU, nothing under specexp.runtimes. With one folder the report
(`measurements.md`, `charts/` and `report.html`) is written beside its records, as a sweep writes
it; with several, into the current folder. It prints what it wrote, where.

`--format csv` or `--format jsonl` writes the measurements as one flat table instead (a row per
measurement, a column per condition, metric and judgment: specexp.record.table), to `-o` or to
standard output.

`--compare BEFORE AFTER` compares two sweeps (folders, or a folder and a results.jsonl): the
change between them, every pair's headline metrics, what could not be paired
(specexp.report.sweep_diff); `--fail-if-slower PCT` exits 1 when AFTER is worse by more than PCT %
beyond noise.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from specexp.check import load_figures
from specexp.check.judgments import judgments
from specexp.record import RecordError, find_records, results_lines
from specexp.record.table import flat_rows, to_csv, to_jsonl
from specexp.spec.errors import SpecError


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m specexp.report", description=__doc__.split("\n\n")[1]
    )
    parser.add_argument(
        "dirs", nargs="*", type=Path, help="result folders (searched for result.json)"
    )
    parser.add_argument(
        "--compare",
        nargs=2,
        type=Path,
        metavar=("BEFORE", "AFTER"),
        default=None,
        help="compare two sweeps: folders of records, or a folder and a results.jsonl",
    )
    parser.add_argument(
        "--fail-if-slower",
        type=float,
        default=None,
        metavar="PCT",
        help="with --compare: exit 1 when a paired headline metric is worse by more than PCT %% beyond noise",
    )
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        help="Markdown report (default: measurements.md beside the records of one folder, else here); "
        "with --format csv|jsonl, the table (default: stdout)",
    )
    parser.add_argument(
        "--format",
        choices=("md", "csv", "jsonl"),
        default="md",
        help="md: the report (default); csv, jsonl: the measurements as one flat table",
    )
    html_choice = parser.add_mutually_exclusive_group()
    html_choice.add_argument(
        "--html", type=Path, default=None, help="the HTML report (default: report.html beside -o)"
    )
    html_choice.add_argument("--no-html", action="store_true", help="write no HTML report")
    parser.add_argument(
        "--vega-script",
        default=None,
        metavar="SRC",
        help="load the HTML's chart scripts from SRC (a path relative to the HTML, or a URL) instead "
        "of inlining them, for a folder of reports sharing one copy; --write-vega-script writes it",
    )
    parser.add_argument(
        "--write-vega-script",
        type=Path,
        default=None,
        metavar="FILE",
        help="write the chart scripts (vega, vega-lite, vega-embed) to FILE and exit",
    )
    parser.add_argument(
        "--title", default=None, help="default: the experiment name, if all runs share one"
    )
    parser.add_argument(
        "--cite",
        type=Path,
        action="append",
        default=[],
        metavar="FIGURES.yaml",
        help="published figures to set beside the runs (docs/vocabulary.md section 4); repeatable",
    )
    args = parser.parse_args(argv)
    if args.write_vega_script is not None:
        from specexp.record import atomic_write
        from specexp.report.render import vega_bundle

        atomic_write(args.write_vega_script, vega_bundle())
        print(f"specexp.report: wrote {args.write_vega_script}")
        return 0
    if args.compare is not None:
        return _compare(args)
    if not args.dirs:
        parser.error("give result folders, or --compare BEFORE AFTER")
    missing = [d for d in args.dirs if not d.exists()]
    if missing:
        print(f"specexp.report: {missing[0]}: no such folder", file=sys.stderr)
        return 2
    try:
        found = find_records(args.dirs)
    except RecordError as err:
        print(f"specexp.report: {err.line()}", file=sys.stderr)
        return 2
    if not found:
        print(
            f"specexp.report: no result.json under {', '.join(map(str, args.dirs))}",
            file=sys.stderr,
        )
        return 2
    if args.format != "md":
        rows = flat_rows(results_lines([r for _, r in found], judgments(found)))
        text = to_csv(rows) if args.format == "csv" else to_jsonl(rows)
        if args.output is None:
            sys.stdout.write(text)
        else:
            args.output.write_text(text, encoding="utf-8")
            print(f"specexp.report: wrote {len(rows)} measurement(s) to {args.output}")
        return 0
    from specexp.report.write import write_report  # the rendering libraries: only for a report

    try:
        cited = [load_figures(path) for path in args.cite]
    except SpecError as err:
        for line in err.lines():  # one per mistake of a figures file
            print(f"specexp.report: {line}", file=sys.stderr)
        return 2
    output = args.output or (args.dirs[0] if len(args.dirs) == 1 else Path()) / "measurements.md"
    html = None if args.no_html else args.html or output.with_name("report.html")
    gc.freeze()  # the records stay for the whole report: the cycle collector need not walk them
    for path in write_report(
        found, output, html, title=args.title, cited=cited, vega_script=args.vega_script
    ):
        print(f"specexp.report: wrote {path}")
    charts = sorted((output.parent / "charts").glob("*.svg"))
    if charts:
        print(f"specexp.report: wrote {len(charts)} chart(s) to {output.parent / 'charts'}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    from specexp.report.build import Report
    from specexp.report.markdown import render_markdown
    from specexp.report.sweep_diff import blocks, compare, read_side, refuse_empty

    missing = [p for p in args.compare if not p.exists()]
    if missing:
        print(f"specexp.report: {missing[0]}: no such folder or file", file=sys.stderr)
        return 2
    try:
        before, after = (read_side(p) for p in args.compare)
    except (RecordError, SpecError) as err:
        print(f"specexp.report: {err.line()}", file=sys.stderr)
        return 2
    result = compare(before, after)
    try:
        refuse_empty(result)
    except SpecError as err:
        print(f"specexp.report: {err.line()}", file=sys.stderr)
        return 2
    title = f"Comparison: {before.name} → {after.name}"
    report = Report(None, title, blocks(result, args.fail_if_slower))
    text = render_markdown(report)
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
        print(args.output)
    if args.html is not None:
        from specexp.report.render import write_html

        print(write_html(report, args.html))
    if args.fail_if_slower is not None and result.slower(args.fail_if_slower):
        return 1
    return 0


def _exit(status: int) -> None:
    """End the process once everything is written and flushed, without freeing the records one
    by one: a report of 10,000 records spent a second on that after its last file was written."""
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(status)


if __name__ == "__main__":
    _exit(main())
