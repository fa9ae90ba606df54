"""Run records on disk: result.json per job, results.jsonl per sweep. Atomic writes.

Every reader goes through `read_record`, which returns a `RunRecord` or refuses the file with
a one-line `RecordError`. A complete result (status ok) is never overwritten by a later failure
of the same run.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from pydantic import ValidationError

from specexp.record.result_line import Judgments, ResultLine
from specexp.record.schema import SCHEMA, RunRecord
from specexp.record.writable import writable
from specexp.spec.metric_defs import COMPARED
from specexp.stats.bootstrap import interval, metric_runs

log = logging.getLogger(__name__)

_UMASK = os.umask(0o022)
os.umask(_UMASK)  # read once, on import, before any thread of specexp's writes a file

RESULT = "result.json"
RESULTS_JSONL = "results.jsonl"


class RecordError(Exception):
    """A result.json that is not a record of this schema version: one line, naming the file."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(self.line())

    def line(self) -> str:
        return f"{self.path}: {self.problem}"


def atomic_write(path: Path, text: str) -> None:
    """Write `text` to `path` so that readers see the old file or the new one, never half. The
    file gets the mode any file the user writes gets (0666 less the umask, as open() gives it,
    not mkstemp's 0600): a record holds no secret (specexp.spec.credentials), and a sweep folder
    is committed or shared whole, records and multirun.yaml alike."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with contextlib.suppress(OSError):  # a file system without modes keeps its own
            os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_record(path: Path) -> RunRecord:
    """The record in `path`; a RecordError for anything else (another version, not JSON, ...)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise RecordError(path, f"cannot read: {err.strerror or err}") from None
    except ValueError:
        raise RecordError(path, "not UTF-8 text") from None
    return parse_record(text, path)


def parse_record(text: str, path: Path) -> RunRecord:
    """The record `text` holds (the file `path`, for the error): the reader's one set of rules."""
    try:
        data = json.loads(text)
    except ValueError:
        raise RecordError(path, "not JSON") from None
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema != SCHEMA:
        found = f"schema {schema!r}" if schema else "no schema key"
        raise RecordError(
            path,
            f"{found}; expected a specexp record of schema {SCHEMA!r} "
            f"(re-run the job with this specexp to record it anew)",
        )
    try:
        return RunRecord.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise RecordError(path, f"{where}: {first['msg'].lower()} (schema {SCHEMA})") from None


def write_record(job_dir: Path, record: RunRecord) -> bool:
    """Write result.json unless a complete result of the same run is already there.

    What is written is first made writable (specexp.record.writable: repaired text, non-finite
    numbers unknown, with a note) and read back by the reader's own rules: a record that could not
    be read back raises RecordError and is not written. Returns False (and writes nothing) when
    that would replace a complete result with an incomplete one.
    """
    path = job_dir / RESULT
    if record.status != "ok" and path.is_file():
        try:
            existing = read_record(path)
        except RecordError:
            existing = None
        if existing is not None and existing.status == "ok" and existing.run_id == record.run_id:
            return False
    text = writable(record).to_json()
    parse_record(text, path)
    atomic_write(path, text)
    return True


def find_records(roots: Iterable[Path]) -> list[tuple[Path, RunRecord]]:
    """Every result.json under `roots` that is a record, in path order. One that is not (another
    schema, half a file, a value this schema refuses) is left out with a warning naming it: it
    never makes the rest of a folder unreadable."""
    found: list[tuple[Path, RunRecord]] = []
    with _no_cycle_collection():
        for root in roots:
            paths = [root] if root.is_file() else _result_files(root)
            for path in paths:
                try:
                    found.append((path, read_record(path)))
                except RecordError as err:
                    log.warning("left out: %s", err.line())
    return found


def _result_files(root: Path) -> list[Path]:
    """Every result.json under `root`, sorted; hidden folders (a job's `.hydra/`) are not entered
    (`os.walk`, whose scandir is several times quicker than `Path.rglob` over 10,000 job folders)."""
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [d for d in subfolders if not d.startswith(".")]
        if RESULT in files:
            found.append(Path(folder) / RESULT)
    return sorted(found)


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused while records are read: a record is a tree (JSON, then
    the models made of it), freed by reference counting alone, and every collection would walk
    all the records read so far: a report of 10,000 records spent two thirds of its reading so."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def completed_runs(root: Path) -> dict[str, Path]:
    """Run id -> the result.json under `root` that completed it (status ok)."""
    return {r.run_id: path for path, r in find_records([root]) if r.status == "ok"}


def complete_result(root: Path, run_id: str) -> Path | None:
    """The result.json under `root` that already completed `run_id`, if any.

    Job directories end with their run id, so only those (and a single run's own result.json)
    are read, not every record."""
    for path in [root / RESULT, *sorted(root.glob(f"*{run_id}/{RESULT}"))]:
        if not path.is_file():
            continue
        try:
            record = read_record(path)
        except RecordError:
            continue
        if record.run_id == run_id and record.status == "ok":
            return path
    return None


Judged = Mapping[tuple[str, int], Judgments]
"""(run id, measurement index) -> the read-time judgments of that measurement (specexp.check.judgments)."""


def results_lines(records: Iterable[RunRecord], judged: Judged | None = None) -> list[ResultLine]:
    """One line per measurement (or per record without measurements), for pandas, polars or
    duckdb: run id, status, the conditions and metrics, each metric's [min, max] over the repeats
    (`spread`), and the `judgments` made when the records are read (output identity, the
    baseline and the speedup over it) where given."""
    lines: list[ResultLine] = []
    for record in records:
        if not record.measurements:
            lines.append(
                ResultLine(
                    run_id=record.run_id,
                    status=record.status,
                    conditions=record.conditions,
                    metrics=None,
                )
            )
        for i, m in enumerate(record.measurements):
            windows = {name: list(v) for name, v in m.samples.items() if name in COMPARED}
            bounds = {
                name: list(b)
                for name in windows
                if (b := interval(metric_runs(m.samples, m.server_start, name))) is not None
            }
            lines.append(
                ResultLine(
                    run_id=record.run_id,
                    status=record.status,
                    conditions=m.conditions,
                    metrics=m.metrics,
                    spread=dict(m.spread),
                    samples=windows,
                    server_start=list(m.server_start) if m.server_start else None,
                    interval=bounds or None,
                    judgments=None
                    if judged is None
                    else judged.get((record.run_id, i), Judgments()),
                )
            )
    return lines


def write_results_jsonl(
    sweep_dir: Path,
    found: Sequence[tuple[Path, RunRecord]] | None = None,
    judged: Judged | None = None,
) -> Path:
    """Rebuild results.jsonl of a sweep directory from its result.json files (`found`: those
    already read), with the judgments made on reading them."""
    records = [r for _, r in (find_records([sweep_dir]) if found is None else found)]
    text = "".join(line.to_json() + "\n" for line in results_lines(records, judged))
    path = sweep_dir / RESULTS_JSONL
    atomic_write(path, text)
    return path
