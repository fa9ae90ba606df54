"""Drive one workload through a runtime: warm-up, then measurement windows.

A measurement point is (prompt length, concurrency, cache state). Each repeat sends one
window of `concurrency` requests at once; counters are read right before and after the
window, so acceptance belongs to exactly that window (specexp.workloads.window). Before a
point's first timed window, a warm-up window of the point's shape runs (`warmup_per_point`), and
a timed window in which the engine compiled a kernel is run again (`rerun_contaminated`).
Warm-up windows (requests of `warmup_output_tokens`), cache-priming windows and windows that were
run again are yielded too when asked (`warmups`), marked `warmup`, so every request can be
recorded; they count in no figure. Cache-reuse workloads send the cold
window and then the warm one over the same prefix, in that order; every other request
carries a unique marker so no cache can serve it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from specexp.measure import telemetry
from specexp.measure.events import Point, Request, Window
from specexp.runtimes.base import Runtime
from specexp.spec.experiment import SloSpec, WorkloadSpec
from specexp.workloads import openloop
from specexp.workloads.datasets import drive_dataset
from specexp.workloads.prompts import PromptBuilder
from specexp.workloads.sampled_outputs import drive_samples
from specexp.workloads.sessions import drive_sessions
from specexp.workloads.tasks import drive_task
from specexp.workloads.trace import drive_trace
from specexp.workloads.window import discarded, opening_warm_up, timed, warm_up, warmup_tokens

PromptFor = Callable[[str, int, str | None, int], str]
"""(request id, prompt tokens, shared prefix group, shared prefix tokens) -> prompt text."""


def default_prompt(workload: WorkloadSpec) -> PromptFor:
    """Instruction plus a unique marker: enough for the simulator, which counts tokens itself."""

    def build(request_id: str, tokens: int, group: str | None, prefix_tokens: int) -> str:
        marker = group if group is not None else request_id
        return f"[{marker}] {workload.prompt}"

    return build


def prompt_lengths(workload: WorkloadSpec) -> list[int]:
    return list(workload.prompt_lengths or [workload.prompt_tokens])


OwnDriver = Callable[
    [Runtime, WorkloadSpec, str, PromptBuilder | None, bool, bool], Iterator[Window]
]
OWN_DRIVERS: dict[str, OwnDriver] = {
    "session": drive_sessions,
    "trace": drive_trace,
    "dataset": drive_dataset,
    "samples": lambda runtime, w, marker, _builder, chat, warmups: drive_samples(
        runtime, w, marker, chat, warmups
    ),
    "task": lambda runtime, w, *_: drive_task(runtime, w),
}
"""The workload kinds (WorkloadSpec.kind) driven by a module of their own; the others are open-loop
(specexp.workloads.openloop) or closed-loop bursts, below."""


def drive(
    runtime: Runtime,
    workload: WorkloadSpec,
    marker: str,
    prompt_for: PromptFor | None = None,
    chat: bool | None = None,
    warmups: bool = False,
    seed: int = 0,
    slo: SloSpec | None = None,
) -> Iterator[Window]:
    """Yield one Window per repeat per point; with `warmups` also the warm-up and priming windows,
    marked `warmup`. `chat` None: as `workload.endpoint` says. Open-loop rates and SLO searches
    (`seed` draws the arrivals, `slo` scores a search) go to specexp.workloads.openloop."""
    chat = workload.endpoint == "chat" if chat is None else chat
    builder = prompt_for if isinstance(prompt_for, PromptBuilder) else None
    own = OWN_DRIVERS.get(workload.kind)
    if own is not None:  # a workload with a driver of its own (its input file checked at plan time)
        yield from own(runtime, workload, marker, builder, chat, warmups)
        return
    build = prompt_for or default_prompt(workload)
    warm_tokens = warmup_tokens(workload)

    def request(rid: str, tokens: int, group: str | None, warmup: bool = False) -> Request:
        prefix = tokens - workload.suffix_tokens if group is not None else 0
        return Request(
            request_id=rid,
            prompt=build(rid, tokens, group, prefix),
            prompt_tokens=tokens,
            max_tokens=warm_tokens if warmup else workload.output_tokens,
            ignore_eos=workload.ignore_eos,
            temperature=workload.temperature,
            thinking=workload.thinking,
            cache_group=group,
            shared_prefix_tokens=max(prefix, 0),
            warmup=warmup,
            chat=chat,
        )

    hardware = runtime.spec.hardware
    sampler = telemetry.sampler_for(runtime.source, hardware.gpu_count, hardware.name)
    try:
        yield from _windows(runtime, workload, marker, request, sampler, warmups, seed, slo)
    finally:
        sampler.close()


def _windows(
    runtime: Runtime,
    workload: WorkloadSpec,
    marker: str,
    request: Callable[..., Request],
    sampler: telemetry.NvmlSampler | telemetry.NoTelemetry,
    warmups: bool,
    seed: int,
    slo: SloSpec | None,
) -> Iterator[Window]:
    lengths = prompt_lengths(workload)
    yield from opening_warm_up(
        runtime,
        workload,
        lambda i: request(f"{marker}-warmup-{i}", lengths[0], None, True),
        lengths[0],
        warmups,
    )
    # -- open-loop load and SLO searches: specexp.workloads.openloop ----------------------------
    if workload.kind == "search":
        yield from openloop.drive_search(
            runtime, workload, request, marker, lengths[0], seed, slo or SloSpec()
        )
        return
    if workload.kind == "rate":
        for tokens in lengths:
            yield from openloop.drive_rates(runtime, workload, request, marker, tokens, seed)
        return
    # -- closed-loop bursts ---------------------------------------------------------------------
    for tokens in lengths:
        for concurrency in workload.concurrency:
            if (
                workload.warmup_per_point
            ):  # this point's batch shapes, before any of its windows is timed
                tag = f"{marker}-p{tokens}-c{concurrency}-warmup"
                # a shared prefix timed warm is a second shape, a prefill onto a cached prefix: the
                # warm-up sends its own prefix as often as a timed prefix is sent (an engine that
                # compiles a kernel at its first hit does it here, not in the first timed warm send;
                # SGLang's hybrid hits only from the third send of a prefix)
                hit = workload.shared_prefix and "warm" in workload.cache
                sends = ["cold", *["warm"] * workload.cache.count("warm")] if hit else ["cold"]
                for nth, cache in enumerate(sends, 1):
                    window = warm_up(
                        runtime,
                        [
                            request(
                                f"{tag}-{i}" + (f"-send{nth}" if nth > 1 else ""),
                                tokens,
                                f"{tag}-s{i}" if hit else None,
                                True,
                            )
                            for i in range(concurrency)
                        ],
                        Point(tokens, concurrency, cache),
                    )
                    if warmups:
                        yield window
            for repeat in range(workload.repeats):
                tag = f"{marker}-p{tokens}-c{concurrency}-r{repeat}"
                groups = [
                    f"{tag}-s{i}" if workload.shared_prefix else None for i in range(concurrency)
                ]
                primed = "warm" in workload.cache and "cold" not in workload.cache
                if primed:
                    window = warm_up(
                        runtime,
                        [request(f"{tag}-prime-{i}", tokens, g) for i, g in enumerate(groups)],
                        Point(tokens, concurrency, "cold"),
                        repeat,
                    )
                    if warmups:
                        yield window
                first = 2 if primed else 1  # a priming send is the first
                for n, cache in enumerate(workload.cache, first):
                    # the n-th send of each request's prefix: a measurement of its own
                    send = n if workload.shared_prefix else None
                    point = Point(tokens, concurrency, cache, send=send)
                    # a shared prefix's windows are not run again: a second cold send would find it warm
                    reruns = 0 if workload.shared_prefix else workload.rerun_contaminated
                    for attempt in range(reruns + 1):
                        # a later send of the same cache state is a request of its own (its id,
                        # and so its marker: the shared prefix with a new suffix)
                        again = cache in workload.cache[: n - first]
                        rid = f"{tag}-{cache}" + (f"-send{n}" if again else "")
                        rid += f"-rerun{attempt}" if attempt else ""
                        requests = [request(f"{rid}-{i}", tokens, g) for i, g in enumerate(groups)]
                        # the prefix is new to the engine anyway; emptying the cache too makes "cold" certain,
                        # and whether the engine confirmed it is recorded
                        reset = (
                            runtime.reset_prefix_cache()
                            if workload.shared_prefix and cache == "cold"
                            else None
                        )
                        window = timed(
                            runtime, requests, point, repeat=repeat, reset=reset, sampler=sampler
                        )
                        if not window.compiles or attempt == reruns:
                            break
                        if warmups:
                            yield discarded(window)
                    yield window
