"""Run records: result.json per job, results.jsonl per sweep. Facts only; atomic writes.

A complete result (status ok) is never overwritten by a later failure of the same run.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

SCHEMA = "specexp.result/1"
RESULT = "result.json"
RESULTS_JSONL = "results.jsonl"


def atomic_write(path: Path, text: str) -> None:
    """Write `text` to `path` so that readers see the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_result(path: Path) -> dict[str, Any] | None:
    """A result.json, or None when missing or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("schema") == SCHEMA else None


def write_result(job_dir: Path, result: dict[str, Any]) -> bool:
    """Write result.json unless a complete result of the same run is already there.

    Returns False (and writes nothing) when that would replace a complete result with
    an incomplete one.
    """
    path = job_dir / RESULT
    existing = read_result(path)
    if existing and existing.get("status") == "ok" and result.get("status") != "ok":
        if existing.get("run_id") == result.get("run_id"):
            return False
    atomic_write(path, json.dumps(result, indent=2, sort_keys=False, default=str) + "\n")
    return True


def find_results(roots: Iterable[Path]) -> list[tuple[Path, dict[str, Any]]]:
    """Every readable result.json under `roots`, in path order."""
    found: list[tuple[Path, dict[str, Any]]] = []
    for root in roots:
        paths = [root] if root.is_file() else sorted(root.rglob(RESULT))
        for path in paths:
            result = read_result(path)
            if result is not None:
                found.append((path, result))
    return found


def completed_runs(root: Path) -> dict[str, Path]:
    """Run id -> the result.json under `root` that completed it (status ok)."""
    return {str(r.get("run_id")): path for path, r in find_results([root]) if r.get("status") == "ok"}


def complete_result(root: Path, run_id: str) -> Path | None:
    """The result.json under `root` that already completed `run_id`, if any."""
    return completed_runs(root).get(run_id)


def results_lines(results: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One flat line per measurement (or per result without measurements), for pandas/duckdb."""
    lines = []
    for result in results:
        base = {"run_id": result.get("run_id"), "status": result.get("status")}
        measurements = result.get("measurements") or []
        if not measurements:
            lines.append({**base, "conditions": result.get("conditions"), "metrics": {}})
        for m in measurements:
            lines.append({**base, "conditions": m.get("conditions"), "metrics": m.get("metrics")})
    return lines


def write_results_jsonl(sweep_dir: Path) -> Path:
    """Rebuild results.jsonl of a sweep directory from its result.json files."""
    results = [r for _, r in find_results([sweep_dir])]
    text = "".join(json.dumps(line, default=str) + "\n" for line in results_lines(results))
    path = sweep_dir / RESULTS_JSONL
    atomic_write(path, text)
    return path
