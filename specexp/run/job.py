"""One job: start (or reach) the runtime, drive the workload, measure, record.

A refused or failed server is recorded as such and the job returns normally, so the sweep
goes on; a completed result is never overwritten by a later failure.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from specexp.measure.conditions import run_conditions
from specexp.measure.events import EngineInfo, Request, RuntimeFailure, Window
from specexp.measure.measurements import measurements
from specexp.measure.request_log import write_requests
from specexp.record import ErrorInfo, Provenance, RunRecord, complete_result, write_record
from specexp.record.schema import SCHEMA, Status
from specexp.run import interrupt, provenance
from specexp.run.plan import Cell
from specexp.runtimes.base import Runtime, runtime_for
from specexp.runtimes.http import pool
from specexp.spec.workload import WorkloadSpec
from specexp.workloads.driver import drive
from specexp.workloads.prompts import CountPrompt, PromptBuilder

log = logging.getLogger(__name__)


def _provenance(overrides: list[str], config: dict[str, Any], **facts: Any) -> Provenance:
    return Provenance(**provenance.environment(), overrides=list(overrides), config=config, **facts)


def skipped_result(
    cell: Cell, reason: str, overrides: list[str], config: dict[str, Any]
) -> RunRecord:
    """The record of a cell that means nothing (status skipped) or that no server could serve
    (refused at plan time: its requests do not fit the context), and why."""
    started = provenance.now()
    refused = reason == cell.refuse_reason and not cell.skip_reason
    return RunRecord(
        schema=SCHEMA,
        run_id=cell.run_id,
        status="refused" if refused else "skipped",
        error=ErrorInfo(kind=cell.refuse_kind if refused else "meaningless_cell", message=reason),
        conditions=run_conditions(
            cell.spec,
            runtime_for(cell.spec.runtime.name).source,
            knows_setup=runtime_for(cell.spec.runtime.name).knows_setup,
        ),
        provenance=_provenance(overrides, config, started_at=started, finished_at=started),
    )


def prompt_marker(cell: Cell) -> str:
    """Request markers depend on the workload and seed only, so that the same prompts go to
    every drafter of a sweep (and their outputs can be compared) while staying unique."""
    blob = cell.spec.workload.model_dump_json() + str(cell.spec.seed)
    return "w" + hashlib.sha256(blob.encode()).hexdigest()[:10]


@dataclass
class _Progress:
    """What a job learned so far: enough to record it, whenever it stops."""

    status: Status = "failed"
    error: ErrorInfo | None = None
    windows: list[Window] = field(default_factory=list)
    info: EngineInfo | None = None
    reused: bool = False
    argv: list[str] | None = None
    drafter_config: str | None = None
    notes: list[str] = field(default_factory=list)
    """What the runtime of an earlier server start could not read (its notes, before it stopped)."""


def run_job(
    cell: Cell,
    job_dir: Path,
    sweep_root: Path | None,
    overrides: list[str],
    config: dict[str, Any],
    rerun: bool = False,
) -> RunRecord | None:
    """Run one cell into `job_dir`; return its record (also written to result.json).

    A cell already complete under `sweep_root` is not run again unless `rerun`: then None.
    """
    if sweep_root is not None and not rerun:
        done = complete_result(sweep_root, cell.run_id)
        if done is not None:
            log.info("run %s is already complete in %s: skipped", cell.run_id, done.parent)
            return None
    if cell.skip_reason:
        record = skipped_result(cell, cell.skip_reason, overrides, config)
        write_record(job_dir, record)
        return record
    spec = cell.spec
    runtime_cls = runtime_for(spec.runtime.name)
    started = provenance.now()
    progress = _Progress()
    runtime = None
    starts = spec.workload.server_starts
    try:
        for start in range(starts):
            if starts > 1:  # every start a fresh server: none held from an earlier job or start
                if runtime is not None:
                    progress.notes += [n for n in runtime.notes() if n not in progress.notes]
                    pool.discard(runtime)
                pool.release()
            runtime, progress.info, progress.reused = pool.acquire(
                cell.server_key,
                spec,
                job_dir,
                functools.partial(runtime_cls, spec, job_dir, server_start=start),
            )
            progress.argv, progress.drafter_config = runtime.server_argv(), runtime.drafter_config()
            for window in _measure(cell, runtime, start):
                progress.windows.append(window)
                interrupt.check()  # a Ctrl-C that an event loop absorbed still ends the job here
                _raise_on_failed_requests(window, runtime)
        progress.status = "ok"
    except KeyboardInterrupt:
        progress.error = ErrorInfo(
            kind="interrupted",
            message="interrupted (Ctrl-C) while measuring",
            log_tail=runtime.log_tail() if runtime else "",
        )
        _finish(cell, progress, runtime, job_dir, overrides, config, started)
        pool.release()
        raise
    except Exception as err:
        failure = _as_failure(err, runtime)
        progress.status = failure.status
        progress.error = ErrorInfo(
            kind=failure.kind, message=failure.message, log_tail=failure.log_tail
        )
        if failure.argv is not None:
            progress.argv = failure.argv
        if runtime is not None:
            pool.discard(runtime)
    finally:
        if runtime is not None and not runtime.reusable:
            pool.discard(runtime)
    try:
        return _finish(cell, progress, runtime, job_dir, overrides, config, started)
    except OSError:
        raise  # the job's folder cannot be written: the caller says so and the sweep goes on
    except Exception as err:  # recording what was measured failed: the job failed, not the sweep
        log.exception("job %s could not be recorded", cell.run_id)
        progress.status = "failed"
        progress.error = ErrorInfo(
            kind="unexpected_error",
            message=f"recording the job failed: {type(err).__name__}: {err}",
            log_tail=runtime.log_tail() if runtime else "",
        )
        return _finish(cell, progress, runtime, job_dir, overrides, config, started, False)


def _measure(cell: Cell, runtime: Runtime, start: int) -> Iterator[Window]:
    """The job's workload driven through one started server, its windows marked with the start;
    a later start's requests carry a marker of their own (`-s1`, ...), as a later repeat's do."""
    spec = cell.spec
    prompts = (
        PromptBuilder(
            spec.workload,
            runtime.tokenize,
            runtime.detokenize,
            prompt_counter(runtime, spec.workload),
        )
        if type(runtime).reads_prompts
        else None
    )
    marker = prompt_marker(cell) + (f"-s{start}" if start else "")
    for window in drive(
        runtime,
        spec.workload,
        marker=marker,
        prompt_for=prompts,
        warmups=True,
        seed=spec.seed,
        slo=spec.slo,
    ):
        yield replace(window, server_start=start) if start else window


def prompt_counter(runtime: Runtime, workload: WorkloadSpec) -> CountPrompt:
    """The server's count of a prompt text sent as the workload's requests are: chat or
    completion, with its thinking switch."""
    probe = Request(
        request_id="count",
        prompt="",
        prompt_tokens=0,
        max_tokens=1,
        temperature=workload.temperature,
        thinking=workload.thinking,
        chat=workload.endpoint == "chat",
    )
    return lambda text: runtime.count_prompt(replace(probe, prompt=text))


def _as_failure(err: Exception, runtime: Runtime | None) -> RuntimeFailure:
    """A RuntimeFailure as it is; anything else (a server answering nonsense to a probe, a bug)
    becomes a failed job with the exception named, so the sweep goes on."""
    if isinstance(err, RuntimeFailure):
        return err
    log.exception("job failed unexpectedly")
    return RuntimeFailure(
        "failed",
        "unexpected_error",
        f"{type(err).__name__}: {err}",
        runtime.log_tail() if runtime else "",
    )


def _raise_on_failed_requests(window: Window, runtime: Runtime) -> None:
    """A window whose requests failed ends the job: later windows would measure a broken server."""
    failed = [t for t in window.traces if t.error]
    if failed:
        first = failed[0]
        raise RuntimeFailure(
            "failed",
            first.error_kind or "request_failed",
            f"{len(failed)} of {len(window.traces)} request(s) failed; first: {first.error}",
            runtime.log_tail(),
        )


def measured_notes(record: RunRecord) -> list[str]:
    """What a job's measurements say about the server's own figures: counters that went backwards,
    token counts the stream cannot hold."""
    notes: list[str] = []
    back = sorted({n for m in record.measurements for n in m.counters_went_back})
    if back:
        notes.append(
            f"engine counters went backwards during a timed window ({', '.join(back)}): the engine "
            "restarted, or a replica went away; those windows count in no acceptance figure"
        )
    beyond = {r: n for m in record.measurements for r, n in m.tokens_beyond_stream.items()}
    if beyond:
        notes.append(
            f"the server's usage counted {sum(beyond.values()):,} token(s) more than the client "
            f"was streamed, over {len(beyond)} request(s): its token counts, and every rate "
            "computed from them, cannot be true"
        )
    return notes


def prompt_length_notes(windows: Sequence[Window]) -> list[str]:
    """Points whose prompts came out longer than asked: the workload's instruction and the chat
    template alone take more tokens than the point's length leaves them (the server's count)."""
    notes = []
    for target in sorted({w.point.prompt_tokens for w in windows if w.point.prompt_tokens}):
        counted = [
            t.prompt_tokens
            for w in windows
            if w.point.prompt_tokens == target
            for t in w.traces
            if t.prompt_tokens
        ]
        if counted and min(counted) > target * 1.1 + 8:
            notes.append(
                f"{target}-token prompts asked for, {min(counted):,} sent: the workload's "
                "instruction and the chat template alone take more than that length leaves them"
            )
    return notes


def _finish(
    cell: Cell,
    progress: _Progress,
    runtime: Runtime | None,
    job_dir: Path,
    overrides: list[str],
    config: dict[str, Any],
    started: str,
    measured: bool = True,
) -> RunRecord:
    """The record of what was measured (partial windows marked), written to result.json; without
    `measured`, the record of a job whose measurements could not be recorded (none kept)."""
    spec, info, runtime_cls = cell.spec, progress.info, runtime_for(cell.spec.runtime.name)
    conditions = run_conditions(
        spec,
        runtime_cls.source,
        runtime_version=info.version if info else None,
        drafter_config=progress.drafter_config,
        knows_setup=runtime_cls.knows_setup,
        reported=info.details.get("conditions") if info else None,
    )
    engine_info = (
        None
        if info is None
        else {
            "version": info.version,
            "kv_cache_tokens": info.kv_cache_tokens,
            "reused_server": progress.reused,
            **info.details,
        }
    )
    record = RunRecord(
        schema=SCHEMA,
        run_id=cell.run_id,
        status=progress.status,
        error=progress.error,
        conditions=conditions,
        provenance=_provenance(
            overrides,
            config,
            started_at=started,
            finished_at=provenance.now(),
            server_argv=progress.argv,
            engine_info=engine_info,
        ),
        measurements=measurements(
            progress.windows,
            conditions,
            prefill_only=spec.workload.output_tokens == 1,
            kv_cache_tokens=info.kv_cache_tokens if info else None,
            partial=progress.status != "ok",
            slo=spec.slo,
        )
        if measured
        else [],
        notes=[
            *progress.notes,
            *(n for n in (runtime.notes() if runtime else []) if n not in progress.notes),
        ],
    )
    notes = [*record.notes, *measured_notes(record), *prompt_length_notes(progress.windows)]
    record = record.model_copy(update={"notes": notes})
    if write_record(job_dir, record):
        write_requests(job_dir, progress.windows, spec.workload.record_chunk_times)
    else:
        log.warning("kept the complete result in %s; this run %s", job_dir, record.status)
    return record
