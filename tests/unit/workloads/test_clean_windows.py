"""A measurement counts only when its window is clean: every point's shape is warmed up before it is
timed, and a window in which the engine's log says it compiled a kernel is run again or marked."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from specexp.measure.conditions import run_conditions
from specexp.measure.events import Request, RequestTrace
from specexp.measure.measurements import measurements
from specexp.measure.request_log import beyond_warmup, read_requests, write_requests
from specexp.runtimes.sim.driver import SimRuntime
from specexp.workloads.driver import drive


class CompilingRuntime(SimRuntime):
    """The simulator with an engine log that reports a kernel compile in the first `dirty` timed
    windows it is asked about (the warm-ups are not asked)."""

    def __init__(self, spec: Any, job_dir: Path, dirty: int) -> None:
        super().__init__(spec, job_dir)
        self.dirty, self.asked, self.sent = dirty, 0, []

    def run_window(self, requests: Sequence[Request]) -> list[RequestTrace]:
        self.sent.append([r.request_id for r in requests])
        return super().run_window(requests)

    def log_mark(self) -> object | None:
        return len(self.sent)

    def compiles_since(self, mark: object | None) -> tuple[str, ...] | None:
        self.asked += 1
        if self.asked <= self.dirty:
            return (
                "WARNING [jit_monitor.py:132] Triton kernel JIT compilation during inference: some_kernel",
            )
        return ()


def run(
    make_spec: Callable[..., Any], tmp_path: Path, dirty: int, *overrides: str
) -> tuple[CompilingRuntime, list[Any]]:
    spec = make_spec(
        "hardware=h200",
        "model=qwen3-8b",
        "quantization=bf16",
        "workload=concurrency",
        "workload.concurrency=[1,4]",
        "workload.prompt_tokens=64",
        "workload.output_tokens=8",
        *overrides,
    )
    runtime = CompilingRuntime(spec, tmp_path, dirty)
    runtime.start()
    return runtime, list(drive(runtime, spec.workload, marker="m", warmups=True))


def test_every_point_is_warmed_up_at_its_own_shape_before_it_is_timed(
    make_spec: Callable[..., Any], tmp_path: Path
) -> None:
    runtime, windows = run(make_spec, tmp_path, 0)
    shapes = [(w.point.concurrency, len(w.traces), w.warmup) for w in windows]
    # the workload's warm-up, then per point a warm-up window of that point's size before its timed one
    assert shapes == [(1, 1, True), (1, 1, True), (1, 1, False), (4, 4, True), (4, 4, False)]
    assert all(
        tag.endswith("warmup")
        for tag in (w.traces[0].request_id.rsplit("-", 1)[0] for w in windows[1::2])
    )
    _, plain = run(make_spec, tmp_path / "off", 0, "workload.warmup_per_point=false")
    assert [w.warmup for w in plain] == [True, False, False]


def test_a_window_in_which_the_engine_compiled_is_run_again_and_kept_out(
    make_spec: Callable[..., Any], tmp_path: Path
) -> None:
    runtime, windows = run(make_spec, tmp_path, 1)
    timed = [w for w in windows if not w.warmup]
    dropped = [w for w in windows if w.discarded]
    assert (
        len(dropped) == 1 and dropped[0].compiles and dropped[0].warmup
    )  # kept for the record, in no figure
    assert [w.compiles for w in timed] == [(), ()]  # the re-run was clean
    rerun = next(w for w in timed if w.point == dropped[0].point)
    assert rerun.traces[0].request_id.endswith(
        "-rerun1-0"
    )  # new prompts: no cache serves the second send
    spec = runtime.spec
    got = measurements(
        windows, run_conditions(spec, "simulated"), prefill_only=False, kv_cache_tokens=None
    )
    assert [m.contaminated for m in got] == [False, False] and all(not m.contamination for m in got)


def test_a_window_that_compiles_again_is_kept_and_marked(
    make_spec: Callable[..., Any], tmp_path: Path
) -> None:
    runtime, windows = run(
        make_spec, tmp_path, 3
    )  # the first point's window and its re-run, and the second's
    spec = runtime.spec
    got = measurements(
        windows, run_conditions(spec, "simulated"), prefill_only=False, kv_cache_tokens=None
    )
    assert [m.contaminated for m in got] == [True, False]  # the second point's re-run was clean
    assert got[0].contamination == [
        "WARNING [jit_monitor.py:132] Triton kernel JIT compilation during inference: some_kernel"
    ]
    assert json.loads(got[0].model_dump_json())["contaminated"] is True


def test_a_runtime_whose_log_cannot_say_leaves_the_question_open(
    make_spec: Callable[..., Any], tmp_path: Path
) -> None:
    spec = make_spec(
        "hardware=h200", "model=qwen3-8b", "quantization=bf16", "workload.output_tokens=8"
    )
    runtime = SimRuntime(spec, tmp_path)
    runtime.start()
    windows = list(drive(runtime, spec.workload, marker="m"))
    got = measurements(
        windows, run_conditions(spec, "simulated"), prefill_only=False, kv_cache_tokens=None
    )
    assert [m.contaminated for m in got] == [None]


def sim_windows(make_spec: Callable[..., Any], tmp_path: Path, *overrides: str) -> list[Any]:
    """Every window, warm-ups included, of the simulated Qwen3-8B on an H200 under `overrides`."""
    spec = make_spec("hardware=h200", "model=qwen3-8b", "quantization=bf16", *overrides)
    runtime = SimRuntime(spec, tmp_path)
    runtime.start()
    return list(drive(runtime, spec.workload, marker="m", warmups=True))


def test_a_prefix_timed_warm_is_warmed_up_with_a_hit_of_its_own(
    make_spec: Callable[..., Any], tmp_path: Path
) -> None:
    # a warm send is a prefill onto a cached prefix, a shape of its own (SGLang's hybrid took 145-163 ms
    # for the first warm hit of a job at 3,700 tokens and 110-119 ms at 8,000 after it): the warm-up sends
    # a prefix of its own cold and then warm, and the timed cold send still finds nothing
    windows = sim_windows(
        make_spec,
        tmp_path,
        "workload=prefix_cache",
        "workload.prompt_lengths=[2000]",
        "workload.repeats=1",
    )
    shapes = [(w.point.cache, w.warmup, w.traces[0].cached_prompt_tokens or 0) for w in windows]
    assert [s[:2] for s in shapes] == [
        ("cold", True),
        ("warm", True),
        ("cold", False),
        ("warm", False),
    ]
    assert shapes[1][2] > 0 and shapes[2][2] == 0 and shapes[3][2] > 0
    # the record says so: no timed window is named as not warmed at its shape; without the warm-up's
    # hit (a record of prefix_cache v2) the first timed hit is
    lines = read_requests(write_requests(tmp_path / "job", windows).parent)
    assert beyond_warmup(lines) == set()
    v2 = [line for line in lines if not (line["warmup"] and line["cache"] == "warm")]
    first_hit = {
        (line["request_id"], line["send"])
        for line in lines
        if not line["warmup"] and line["cache"] == "warm"
    }
    assert beyond_warmup(v2) == first_hit


def three_sends(make_spec: Callable[..., Any], tmp_path: Path) -> list[Any]:
    """The windows of one 2,000-token prefix sent cold, then warm twice, on the simulator."""
    return sim_windows(
        make_spec,
        tmp_path,
        "workload=prefix_cache",
        "workload.prompt_lengths=[2000]",
        "workload.cache=[cold,warm,warm]",
        "workload.repeats=1",
    )


def test_a_later_send_that_shares_its_id_with_the_first_hit_is_not_named(
    make_spec: Callable[..., Any], tmp_path: Path
) -> None:
    # records written before each send had an id of its own gave a prefix's second and third sends one
    # id: only the first hit, the second send, is named, by its send
    windows = three_sends(make_spec, tmp_path)
    lines = read_requests(write_requests(tmp_path / "job", windows).parent)
    old = [
        dict(line, request_id=line["request_id"].replace("-send3", ""))
        for line in lines
        if not (line["warmup"] and line["cache"] == "warm")
    ]
    sends = {line["send"]: line["request_id"] for line in old if not line["warmup"]}
    assert sends[2] == sends[3] and old[-1]["cached_prompt_tokens"] > 0
    assert beyond_warmup(old) == {(sends[2], 2)}


def test_a_trace_is_warmed_up_at_its_longest_prompt_and_a_first_hit_of_its_own(
    make_spec: Callable[..., Any], tmp_path: Path
) -> None:
    # the shipped trace's requests share prefixes: its warm-up sends a prompt as long as its longest,
    # then one on the same blocks (the first prefill onto a cached prefix), before the trace is timed
    windows = sim_windows(make_spec, tmp_path, "workload=trace")
    longest = max(t.prompt_tokens for t in windows[-1].traces)
    shaped = [w for w in windows if w.warmup and w.point.prompt_tokens == longest]
    assert [w.point.cache for w in shaped] == ["cold", "warm"]
    assert [t.prompt_tokens for w in shaped for t in w.traces] == [longest, longest]
    assert (shaped[0].traces[0].cached_prompt_tokens or 0) == 0
    assert 2 * (shaped[1].traces[0].cached_prompt_tokens or 0) > longest
    assert any(t.cached_prompt_tokens for t in windows[-1].traces)  # the timed trace has warm hits
    lines = read_requests(write_requests(tmp_path / "job", windows).parent)
    assert beyond_warmup(lines) == set()
    # without the warm-up's hit (a record of trace v2, warmed only with its own short prompt), the
    # whole timed trace is named
    timed_ids = {(line["request_id"], line.get("send")) for line in lines if not line["warmup"]}
    v2 = [line for line in lines if not line["request_id"].startswith("m-trace-warmup")]
    assert beyond_warmup(v2) == timed_ids
    no_hit = [line for line in lines if not line["request_id"].endswith("warmup-send2")]
    assert beyond_warmup(no_hit) == timed_ids


def test_the_warm_up_sends_its_prefix_as_often_as_a_timed_prefix_is_sent(
    make_spec: Callable[..., Any], tmp_path: Path
) -> None:
    # SGLang's hybrid hits a prefix only at its third send (the second saves the recurrent state):
    # a warm-up that sent its prefix twice never reached the hit's shape, and the first timed hit of
    # each length compiled a kernel in its window (docs/engines.md 2.5)
    windows = three_sends(make_spec, tmp_path)
    warm_ups = [w for w in windows if w.warmup]
    assert [w.point.cache for w in warm_ups] == ["cold", "warm", "warm"]
    assert len({t.request_id.rsplit("-send", 1)[0] for w in warm_ups for t in w.traces}) == 1
