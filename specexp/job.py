"""One job: start (or reach) the runtime, drive the workload, measure, record.

A refused or failed server is recorded as such and the job returns normally, so the sweep
goes on; a completed result is never overwritten by a later failure.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

from specexp import provenance
from specexp.conditions import run_conditions
from specexp.identity import fill_output_identity
from specexp.measure import measurements
from specexp.plan import Cell
from specexp.record import SCHEMA, complete_result, write_result
from specexp.request_log import write_requests
from specexp.runtimes import pool
from specexp.runtimes.base import Runtime, RuntimeFailure, runtime_for
from specexp.events import Window
from specexp.workloads.driver import drive
from specexp.workloads.prompts import PromptBuilder

log = logging.getLogger(__name__)


def base_result(cell: Cell, overrides: list[str], config: dict[str, Any], source: str) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "run_id": cell.run_id,
        "status": "skipped",
        "error": None,
        "conditions": run_conditions(cell.spec, None, source),
        "provenance": {
            **provenance.environment(),
            "started_at": provenance.now(),
            "finished_at": None,
            "overrides": list(overrides),
            "config": config,
            "server_argv": None,
            "engine_info": None,
        },
        "measurements": [],
    }


def skipped_result(cell: Cell, reason: str, overrides: list[str], config: dict[str, Any]) -> dict[str, Any]:
    """The record of a cell that means nothing: status skipped, and why."""
    result = base_result(cell, overrides, config, runtime_for(cell.spec.runtime.name).source)
    result["error"] = {"kind": "meaningless_cell", "message": reason, "log_tail": ""}
    result["provenance"]["finished_at"] = result["provenance"]["started_at"]
    return result


def prompt_marker(cell: Cell) -> str:
    """Request markers depend on the workload and seed only, so that the same prompts go to
    every drafter of a sweep (and their outputs can be compared) while staying unique."""
    blob = cell.spec.workload.model_dump_json() + str(cell.spec.seed)
    return "w" + hashlib.sha256(blob.encode()).hexdigest()[:10]


def run_job(
    cell: Cell, job_dir: Path, sweep_root: Path | None, overrides: list[str], config: dict[str, Any],
    rerun: bool = False,
) -> dict[str, Any]:
    """Run one cell into `job_dir`; return its result (also written to result.json).

    A cell already complete under `sweep_root` is not run again unless `rerun`.
    """
    if sweep_root is not None and not rerun:
        done = complete_result(sweep_root, cell.run_id)
        if done is not None:
            log.info("run %s is already complete in %s: skipped", cell.run_id, done.parent)
            return {"status": "ok", "run_id": cell.run_id, "reused": f"already complete in {done.parent}"}
    if cell.skip_reason:
        result = skipped_result(cell, cell.skip_reason, overrides, config)
        write_result(job_dir, result)
        return result
    spec = cell.spec
    runtime_cls = runtime_for(spec.runtime.name)
    result = base_result(cell, overrides, config, runtime_cls.source)
    windows: list[Window] = []
    info = None
    runtime = None
    try:
        runtime, info, reused = pool.acquire(cell.server_key, spec, job_dir, lambda: runtime_cls(spec, job_dir))
        result["provenance"]["server_argv"] = runtime.server_argv()
        result["provenance"]["engine_info"] = {
            "version": info.version, "kv_cache_tokens": info.kv_cache_tokens, "reused_server": reused, **info.details,
        }
        result["conditions"]["runtime_version"] = info.version
        result["conditions"]["drafter_config"] = runtime.drafter_config()
        prompts = PromptBuilder(spec.workload, runtime.tokenize, runtime.detokenize)
        for window in drive(runtime, spec.workload, marker=prompt_marker(cell), prompt_for=prompts, warmups=True):
            windows.append(window)
            _raise_on_failed_requests(window, runtime)
        result["status"] = "ok"
    except KeyboardInterrupt:
        result["status"] = "failed"
        result["error"] = {"kind": "interrupted", "message": "interrupted (Ctrl-C) while measuring",
                           "log_tail": runtime.log_tail() if runtime else ""}
        _finish(result, windows, spec, info, sweep_root, job_dir, runtime)
        pool.release()
        raise
    except Exception as err:  # noqa: BLE001 - whatever a server does, the sweep goes on
        failure = _as_failure(err, runtime)
        result["status"] = failure.status
        result["error"] = {"kind": failure.kind, "message": failure.message, "log_tail": failure.log_tail}
        if failure.argv is not None:
            result["provenance"]["server_argv"] = failure.argv
        if runtime is not None:
            pool.discard(runtime)
    finally:
        if runtime is not None and not runtime.reusable:
            pool.discard(runtime)
    return _finish(result, windows, spec, info, sweep_root, job_dir, runtime)


def _as_failure(err: Exception, runtime: Runtime | None) -> RuntimeFailure:
    """A RuntimeFailure as it is; anything else (a server answering nonsense to a probe, a bug)
    becomes a failed job with the exception named, so the sweep goes on."""
    if isinstance(err, RuntimeFailure):
        return err
    log.exception("job failed unexpectedly")
    return RuntimeFailure("failed", "unexpected_error", f"{type(err).__name__}: {err}",
                          runtime.log_tail() if runtime else "")


def _raise_on_failed_requests(window: Window, runtime: Runtime) -> None:
    """A window whose requests failed ends the job: later windows would measure a broken server."""
    failed = [t for t in window.traces if t.error]
    if failed:
        first = failed[0]
        raise RuntimeFailure(
            "failed", first.error_kind or "request_failed",
            f"{len(failed)} of {len(window.traces)} request(s) failed; first: {first.error}",
            runtime.log_tail(),
        )


def _finish(
    result: dict[str, Any], windows: list[Window], spec: Any, info: Any, sweep_root: Path | None, job_dir: Path,
    runtime: Runtime | None,
) -> dict[str, Any]:
    """Measurements of every finished window (partial ones marked), identity, notes, write."""
    result["measurements"] = measurements(
        windows, dict(result["conditions"]), prefill_only=spec.workload.output_tokens == 1,
        kv_cache_tokens=info.kv_cache_tokens if info else None,
    )
    if result["status"] != "ok":
        for m in result["measurements"]:
            m["partial"] = True
    if sweep_root is not None:
        fill_output_identity(result, sweep_root)
    if runtime is not None and runtime.notes():
        result["notes"] = runtime.notes()
    result["provenance"]["finished_at"] = provenance.now()
    if write_result(job_dir, result):
        write_requests(job_dir, windows, spec.workload.record_chunk_times)
    else:
        log.warning("kept the complete result in %s; this run %s", job_dir, result["status"])
    return result

