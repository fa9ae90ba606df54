"""runtime.engine=llamacpp schedules as llama-server does: slots chosen least recently used, each
step filled slot by slot, and micro-batches cut by split_equal over runs of consecutive slot ids
(benchmarks/results/llamacpp-trace.md shows each of these on a real server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from specexp.measure.events import Request
from specexp.roofline.costmodel import Slice
from specexp.runtimes.sim.driver import SimRuntime
from specexp.sim.engine import SimEngine
from specexp.sim.ubatches import equal_ubatches
from specexp.workloads.driver import drive
from tests.unit.sim.test_profiles import H200_8B, spec_of, with_profile

LLAMACPP = [*H200_8B, "runtime.engine=llamacpp"]


def engine_of(tmp_path: Path, *overrides: str, **figures: Any):  # type: ignore[no-untyped-def]
    """The simulated llama-server of these overrides, its profile's `figures` changed."""
    runtime = with_profile(spec_of(*LLAMACPP, *overrides), tmp_path, **figures)
    return runtime.engine


def request(name: str, prompt: int = 64, out: int = 2) -> Request:
    return Request(request_id=name, prompt="x", prompt_tokens=prompt, max_tokens=out)


def test_a_fresh_server_hands_out_its_highest_slots_first_then_the_least_recently_used(
    tmp_path: Path,
) -> None:
    engine = engine_of(tmp_path, "runtime.max_num_seqs=4")
    order = []
    for i in range(6):
        before = dict(enumerate(engine._slot_last_used))
        engine.run([request(f"r{i}")])
        (changed,) = [s for s, last in enumerate(engine._slot_last_used) if last != before[s]]
        order.append(changed)
    # never-used slots tie at -1 and llama-server's <= keeps the last of them; then the oldest release
    assert order == [3, 2, 1, 0, 3, 2]


def test_slots_finishing_in_one_step_are_reused_in_slot_order(tmp_path: Path) -> None:
    # llama-server releases the slots that finish in one step one after the other in slot order, each
    # stamped with the time: the lowest of them is the least recently used.
    # requests that reach the main loop before its step (no launch between them: a burst's first request
    # would otherwise start a step alone)
    engine = engine_of(tmp_path, "runtime.max_num_seqs=8", request_serial_ms=0.0)
    engine.run([request("warm")])  # slot 7
    first = engine.run([request(f"a{i}") for i in range(4)])
    assert len({t.events[-1].t for t in first}) == 1  # all four finish in the same step
    taken = sorted(i for i, last in enumerate(engine._slot_last_used) if last[0] >= 0)
    assert taken == [3, 4, 5, 6, 7]
    order = []
    for i in range(4):
        before = list(engine._slot_last_used)
        engine.run([request(f"b{i}")])
        order.append(next(s for s, last in enumerate(engine._slot_last_used) if last != before[s]))
    assert order == [2, 1, 0, 7]  # never used first (highest id), then the oldest release
    again = []
    for i in range(4):
        before = list(engine._slot_last_used)
        engine.run([request(f"c{i}")])
        again.append(next(s for s, last in enumerate(engine._slot_last_used) if last != before[s]))
    assert again == [3, 4, 5, 6]  # the four released together: the lowest slot first


def test_a_break_in_slot_ids_cuts_the_decode_tokens_into_more_passes(tmp_path: Path) -> None:
    decode = [Slice(tokens=1, context=600, logits=1)] * 4
    assert len(equal_ubatches(decode, [], 512, [4, 5, 6, 7])) == 1
    assert len(equal_ubatches(decode, [], 512, [4, 5, 9, 10])) == 2
    assert len(equal_ubatches(decode, [], 512, [1, 3, 5, 7])) == 4
    engine = engine_of(tmp_path)
    steps = {}
    for ids in ([4, 5, 6, 7], [1, 3, 5, 7]):
        steps[tuple(ids)] = replayed(engine, decode, ids)
    assert steps[(1, 3, 5, 7)] > 1.5 * steps[(4, 5, 6, 7)]  # every run reads the weights again


def test_split_equal_keeps_every_token_and_gives_each_sequence_of_a_pass_the_same_share() -> None:
    decode = [Slice(tokens=1, context=600, logits=1)] * 3
    prompts = [Slice(tokens=n, context=0, logits=1) for n in (29, 519, 519, 490)]
    for ids in ([0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 10, 11, 12, 20]):
        passes = equal_ubatches(decode, prompts, 512, ids)
        assert sum(x.tokens for group in passes for x in group) == 3 + 29 + 519 + 519 + 490
        assert sum(x.logits for group in passes for x in group) == 3 + 4
        assert all(
            sum(x.tokens for x in group) <= 512 and len({x.tokens for x in group}) == 1
            for group in passes
        )
    consecutive = equal_ubatches(decode, prompts, 512, [0, 1, 2, 3, 4, 5, 6])
    assert [x.tokens for x in consecutive[0]] == [
        1
    ] * 7  # the decode tokens ride with a token of each prompt


def test_a_step_fills_its_slots_in_order_so_prompts_that_arrive_together_finish_a_batch_at_a_time(
    tmp_path: Path,
) -> None:
    spec = spec_of(
        *LLAMACPP,
        "workload=concurrency",
        "workload.concurrency=[8]",
        "workload.prompt_tokens=512",
        "workload.output_tokens=4",
        "workload.warmup=0",
        "workload.repeats=1",
    )
    # prompts that reach the main loop together: no launch between them (with one, the first of a
    # burst starts a step alone and the rest follow: test_profiles.py)
    runtime = with_profile(spec, tmp_path, request_serial_ms=0.0)
    (window,) = drive(runtime, spec.workload, marker="t")
    first = sorted(t.events[0].t - t.sent_at for t in window.traces)
    prompt = window.traces[0].prompt_tokens
    per_step = (
        runtime.engine.profile.batch_tokens // prompt
    )  # whole prompts a 2048-token step finishes
    assert first.count(first[0]) == per_step
    assert first[per_step] > first[0]
    # the step's remaining tokens start the next slot's prompt, so the second step finishes as many again
    # and the last prompts wait for a third
    assert len({round(t, 6) for t in first}) >= 8 // per_step


def test_every_prefill_pass_pays_the_engines_pass_cost(tmp_path: Path) -> None:
    engine = engine_of(tmp_path)
    cost = engine.profile.prefill_pass_overhead_ms / 1e3
    assert cost > 0
    one = [Slice(tokens=2048, context=0, logits=1)]
    many = [Slice(tokens=n, context=0, logits=1) for n in (29, 519, 519, 981)]
    passes_one = len(equal_ubatches([], one, 512))
    passes_many = len(equal_ubatches([], many, 512, [0, 1, 2, 3]))
    assert passes_many > passes_one
    seconds = {}
    for name, prompts in (("one", one), ("many", many)):
        chunks = [(x.tokens, 0, x.tokens) for x in prompts]
        seconds[name] = engine.passes.seconds([], chunks, list(range(len(prompts))))
    assert seconds["many"] - seconds["one"] >= (passes_many - passes_one) * cost


def test_a_pass_of_more_than_one_token_pays_the_engines_batched_cost(tmp_path: Path) -> None:
    # llama.cpp runs a one-token pass through its fused mat-vec kernels and a wider one without them.
    engine = engine_of(tmp_path)
    extra = engine.profile.batched_pass_overhead_ms / 1e3
    assert extra > 0
    one, two = (
        [Slice(tokens=1, context=600, logits=1)],
        [Slice(tokens=1, context=600, logits=1)] * 2,
    )
    assert replayed(engine, one, [5]) == engine.target.pass_seconds(one)
    assert replayed(engine, two, [5, 6]) == engine.target.pass_seconds(two) + extra
    # slots 5 and 9 are two runs: two one-token passes, neither pays it (each rebuilds its graph,
    # as llama.cpp keeps only the last pass's to reuse, and replays its CUDA graph)
    rebuild = engine.profile.graph_rebuild_ms / 1e3
    assert replayed(engine, two, [5, 9]) == pytest.approx(
        2 * (engine.target.pass_seconds(one) + rebuild)
    )


def test_a_pass_run_without_a_cuda_graph_costs_what_the_next_measured_width_costs(
    tmp_path: Path,
) -> None:
    # Past 8 tokens llama.cpp leaves its mat-vec kernels for cuBLAS: the cost steps up there.
    engine = engine_of(tmp_path)
    table = engine.profile.ungraphed_pass_ms
    for tokens, width in ((1, 1), (3, 4), (8, 8), (9, 16), (12, 16), (40, 32)):
        assert engine.passes._ungraphed_ms(tokens) == table[width]


def test_verify_passes_wider_than_a_micro_batch_are_split_and_each_part_pays_its_graph(
    tmp_path: Path,
) -> None:
    # 32 slots verifying k = 16 drafts each: 544 tokens, two micro-batches of all 32 slots.
    engine = engine_of(tmp_path)
    verify = [Slice(tokens=17, context=600, logits=17)] * 32
    ids = list(range(32))
    first = engine.passes.seconds(verify, [], ids)
    assert first > replayed(engine, verify, ids) > 0


def replayed(engine: SimEngine, verify: list[Slice], ids: list[int]) -> float:
    """A decode step's passes once llama.cpp replays their compute graphs (the third step alike)."""
    for _ in range(2):
        engine.passes.seconds(verify, [], ids)
    return engine.passes.seconds(verify, [], ids)


def test_a_decode_pass_of_a_new_shape_rebuilds_its_graph_and_runs_without_a_cuda_graph_once(
    tmp_path: Path,
) -> None:
    engine = engine_of(tmp_path)
    p = engine.profile
    assert p.graph_rebuild_ms > 0 and p.graph_capture_ms > 0 and p.ungraphed_pass_ms
    eight = [Slice(tokens=1, context=600, logits=1)] * 8
    kernels = engine.target.pass_seconds(eight) + p.batched_pass_overhead_ms / 1e3
    ids = list(range(8))
    steps = [engine.passes.seconds(eight, [], ids) - kernels for _ in range(4)]
    assert steps[0] == pytest.approx(
        (p.graph_rebuild_ms + p.ungraphed_pass_ms[8]) / 1e3
    )  # new: rebuilt, ungraphed
    assert steps[1] == pytest.approx(p.graph_capture_ms / 1e3)  # the same again: captured
    assert steps[2] == steps[3] == pytest.approx(0.0)  # replayed
    # one slot fewer, or a context past the next 256-cell KV padding, is a new shape again
    assert (
        engine.passes.seconds(eight[:7], [], ids[:7])
        > engine.target.pass_seconds(eight[:7]) + p.batched_pass_overhead_ms / 1e3
    )
    longer = [Slice(tokens=1, context=800, logits=1)] * 8
    assert engine.passes.seconds(longer, [], ids) - engine.target.pass_seconds(
        longer
    ) > kernels - engine.target.pass_seconds(eight)
    # a step that prefills leaves no CUDA graph behind: the decode shape warms up again
    replayed(engine, eight, ids)
    engine.passes.seconds(eight, [(512, 0, 519)], [*ids, 8])
    assert engine.passes.seconds(eight, [], ids) - kernels == pytest.approx(steps[0])
    assert engine.passes.seconds(eight, [], ids) - kernels == pytest.approx(steps[1])
    # two runs of slots in every step: both graphs rebuilt every step, both CUDA graphs replayed
    four = eight[:4]
    runs = [*ids[:4], *(i + 20 for i in ids[4:])]
    wrapped = replayed(engine, eight, runs) - 2 * (
        engine.target.pass_seconds(four) + p.batched_pass_overhead_ms / 1e3
    )
    assert wrapped == pytest.approx(2 * p.graph_rebuild_ms / 1e3)


def test_a_bursts_first_request_starts_a_step_alone_and_the_rest_join_when_it_ends(
    tmp_path: Path,
) -> None:
    # llama-server's log of short bursts on the H200 (benchmarks/results/engine_calibration.md, held
    # out): at 8 streams the first request woke the idle main loop and prefilled alone, the other seven
    # were launched when that step ended and prefilled together
    spec = spec_of(
        *LLAMACPP,
        "workload=concurrency",
        "workload.concurrency=[8]",
        "workload.prompt_tokens=88",
        "workload.output_tokens=4",
        "workload.warmup=0",
        "workload.repeats=1",
    )
    runtime = SimRuntime(spec, tmp_path)
    runtime.start()
    (window,) = drive(runtime, spec.workload, marker="t")
    first = sorted(t.events[0].t for t in window.traces)
    assert first[0] < first[1]
    assert len({round(t, 9) for t in first[1:]}) == 1
    assert runtime.engine.profile.request_serial_ms > 0
