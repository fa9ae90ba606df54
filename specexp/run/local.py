"""Jobs of this machine, run by the sweeper itself with the specs it composed for the plan.

Jobs on real engines run one after another in plan order: a server is kept for the next job of its
configuration, and engines share the machine's GPUs. Simulated jobs need nothing of one another
(each starts its own simulated engine from its spec, and its figures are a function of that spec):
they are spread over the machine's cores, each worker process taking the next job when it is done
with one. Their records are the ones a run one after another writes; only the order in which they
finish differs.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from specexp.run import progress
from specexp.run.compose import Composed
from specexp.run.launch import run_composed

Job = tuple[list[str], Path]
"""A job's overrides and its directory."""


def run_local(
    jobs: Sequence[Job], sweep_dir: Path, compose: Callable[[list[str]], Composed], simulated: bool
) -> list[str]:
    """Run `jobs` (their statuses, in order): spread over the cores when they are all `simulated`."""
    workers = min(_cores(), len(jobs)) if simulated and "fork" in mp.get_all_start_methods() else 1
    if workers <= 1:
        return [_run(compose, overrides, job_dir, sweep_dir) for overrides, job_dir in jobs]
    return _spread(jobs, sweep_dir, compose, workers)


def _run(
    compose: Callable[[list[str]], Composed], overrides: list[str], job_dir: Path, sweep_dir: Path
) -> str:
    composed = compose(overrides)
    return run_composed(composed, overrides, job_dir, sweep_dir, multirun=True, save_config=True)


def _weight(composed: Composed) -> int:
    """A simulated job's work, roughly: the tokens its windows generate (every concurrency's
    streams, times the output length)."""
    workload = composed.spec.workload
    return sum(workload.concurrency) * workload.output_tokens


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class _Forwarded:
    """A worker's progress, sent to the sweep's own progress in the parent."""

    def __init__(self, events: Any) -> None:
        self.events = events

    def started_job(self, description: str) -> None:
        self.events.put(("started", description))

    def finished_job(self, description: str, status: str) -> None:
        self.events.put(("finished", description, status))


def _spread(
    jobs: Sequence[Job], sweep_dir: Path, compose: Callable[[list[str]], Composed], workers: int
) -> list[str]:
    ctx = mp.get_context("fork")  # a worker has the composed specs and every module already
    todo, events = ctx.Queue(), ctx.Queue()
    for index in sorted(range(len(jobs)), key=lambda i: -_weight(compose(jobs[i][0]))):
        todo.put(index)  # the longest first: the workers finish together
    for _ in range(workers):
        todo.put(None)
    procs = [
        ctx.Process(
            target=_work,
            args=(jobs, sweep_dir, compose, todo, events),
            daemon=True,
            name=f"specexp-job-{i}",
        )
        for i in range(workers)
    ]
    for proc in procs:
        proc.start()
    statuses: list[str | None] = [None] * len(jobs)
    shown = progress.current()
    try:
        while any(s is None for s in statuses):
            try:
                event = events.get(timeout=1.0)
            except queue.Empty:
                if not any(p.is_alive() for p in procs):
                    break  # a worker died without a word: its jobs are left unfinished, and said so below
                continue
            if event[0] == "done":
                statuses[event[1]] = event[2]
            elif shown is not None:
                getattr(shown, f"{event[0]}_job")(*event[1:])
    finally:
        for proc in procs:
            proc.join(5)
            if proc.is_alive():
                proc.kill()
    return [s if s is not None else "failed" for s in statuses]


def _work(
    jobs: Sequence[Job],
    sweep_dir: Path,
    compose: Callable[[list[str]], Composed],
    todo: Any,
    events: Any,
) -> None:
    progress.forward_to(_Forwarded(events))
    while (index := todo.get()) is not None:
        overrides, job_dir = jobs[index]
        try:
            status = _run(compose, overrides, job_dir, sweep_dir)
        except KeyboardInterrupt:
            status = "interrupted"  # the job's record says so (specexp.run.job); the parent stops the sweep
            events.put(("done", index, status))
            return
        events.put(("done", index, status))
