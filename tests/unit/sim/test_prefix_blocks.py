"""Where a warm request can resume: the blocks a drafter gives up, and a hybrid model's states.

vLLM drops the last matched block of every hit when the drafter reads the target's hidden
states (EAGLE, MTP, DFlash, DSpark), and a hybrid model can resume only where a prefill chunk
ended on a block boundary: its scheduler cuts chunks to whole blocks and ends one at the
prompt's last full block (a block earlier with such a drafter). SGLang keeps a state on a
64-token grid in every chunk, llama-server checkpoints 516 and 4 tokens before a prompt's end, and
vLLM and SGLang also keep one where a request's KV hit ran past its state hit. These set how much
of a warm prompt is recomputed, so the size of the warm gain.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from specexp.sim.kvcache import CacheLayout
from tests.unit.sim.test_physics_serving import DENSE_LENGTHS, cold_warm, prefix_spec


def chunks(layout: CacheLayout, prompt: int, budget: int, start: int = 0) -> list[int]:
    """The chunk ends of one prompt prefilled alone, `budget` tokens a step."""
    ends = []
    while start < prompt:
        n = layout.aligned_chunk(start, min(budget, prompt - start), prompt) or min(
            budget, prompt - start
        )
        start += n
        ends.append(start)
    return ends


def hybrid(block: int, drop: bool = False) -> CacheLayout:
    return CacheLayout.build(
        enabled=True,
        hits=True,
        block=block,
        max_num_batched_tokens=8192,
        state_bytes=1.0,
        drop_last_block=drop,
    )


def test_hybrid_chunks_end_on_blocks_and_one_ends_at_the_last_cacheable_block() -> None:
    # 224-token blocks: 8,192-token steps are cut to 36 blocks; a chunk stops at the last full block.
    assert chunks(hybrid(224), 16_000, 8192) == [8064, 15904, 16000]
    # A drafter that gives up a hit's last block moves that stop a block earlier, so that the
    # same prefix, less its last block, still ends on a state.
    assert chunks(hybrid(1600, drop=True), 16_500, 8192) == [8000, 14400, 16500]
    assert chunks(hybrid(1600, drop=True), 3_700, 8192) == [1600, 3700]
    # Dense models, and a hybrid one with the cache off, take what the step offers.
    dense = CacheLayout.build(
        enabled=True, hits=True, block=16, max_num_batched_tokens=8192, state_bytes=0.0
    )
    off = CacheLayout.build(
        enabled=False, hits=True, block=224, max_num_batched_tokens=8192, state_bytes=1.0
    )
    assert chunks(dense, 16_000, 8192) == chunks(off, 16_000, 8192) == [8192, 16000]


@pytest.mark.parametrize(("block", "drop"), [(224, False), (1600, True), (1600, False)])
@pytest.mark.parametrize("prompt", [3700, 16_000, 16_500, 129_000])
def test_a_hit_never_reaches_the_last_token_and_gives_up_a_block_for_the_drafter(
    block: int, drop: bool, prompt: int
) -> None:
    layout = hybrid(block, drop)
    whole = (prompt - 1) // block
    assert layout.usable_blocks(prompt, prompt // block) == max(whole - drop, 0)
    assert layout.usable_blocks(prompt, 2) == max(min(2, whole) - drop, 0)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_only_vllm_gives_up_a_block_and_only_for_a_drafter_that_reads_hidden_states(
    engine: str, tmp_path: Path
) -> None:
    def cached(drafter: str, k: int | None) -> list[int]:
        s = prefix_spec("h200", "qwen3-8b", "bf16", drafter, k, DENSE_LENGTHS, engine=engine)
        return [c for _, _, c in cold_warm(s, tmp_path)]

    base = cached("none", None)
    assert cached("ngram", 4) == base  # a lookup drafter needs no hidden states
    given_up = 16 if engine == "vllm" else 0
    assert cached("eagle3", 3) == [c - given_up for c in base]


def test_mtp_on_a_hybrid_model_recomputes_one_to_two_blocks_and_gains_less(tmp_path: Path) -> None:
    lengths = [3700, 16_500]
    plain = cold_warm(prefix_spec(lengths=lengths), tmp_path / "none")
    mtp = cold_warm(prefix_spec(drafter="mtp", k=3, lengths=lengths), tmp_path / "mtp")
    # vLLM's page-aligned blocks for the Spark's hybrid model: 784 tokens, 800 with MTP k = 3
    for n, (cold, warm, cached), (cold_m, warm_m, cached_m) in zip(
        lengths, plain, mtp, strict=True
    ):
        assert n - cached < 784 + 16  # without a drafter: less than one block and the new suffix
        assert 800 <= n - cached_m < 2 * 800 + 16  # with MTP: the block it gives up, plus the rest
        assert cold_m / warm_m < cold / warm


# -- where each engine keeps a hybrid model's states ---------------------------------------------


def sightings(engine: str, prompt: int, suffixes: list[int]) -> list[int]:
    """Cached prompt tokens of requests sent one after another on one simulated server, each the same
    prefix of `prompt` tokens less its own new suffix of suffixes[i] tokens (the Spark's hybrid model)."""
    from specexp.measure.events import Request
    from specexp.sim.startup import start_engine

    _, server = start_engine(prefix_spec(engine=engine))
    cached = []
    for i, suffix in enumerate(suffixes):
        request = Request(
            request_id=f"r{i}",
            prompt="",
            prompt_tokens=prompt,
            max_tokens=1,
            cache_group="prefix",
            shared_prefix_tokens=prompt - suffix,
        )
        cached.append(server.run([request])[0].cached_prompt_tokens or 0)
    return cached


def test_sglang_keeps_a_state_on_its_grid_and_at_the_branch() -> None:
    # As SGLang 0.5.12 did on the H200 (extra_buffer, benchmarks/data/h200-sglang-2026-12-04b): a
    # 3,700-token prompt keeps its state at 3,648 (57 x 64), past what a prompt with a new 81-token
    # suffix shares (3,619), so the second request finds nothing; it keeps the state where its match
    # ended (the branch, floored to the grid), and the third resumes there.
    assert sightings("sglang", 3700, [81, 81, 81]) == [0, 0, 3584]
    # a suffix shorter than the prompt's tail past the grid: the first state is shared
    assert sightings("sglang", 3700, [16, 16, 16]) == [0, 3648, 3648]
    # a suffix that crosses grid points: from where the longer-differing match ended
    assert sightings("sglang", 3700, [200, 200, 200]) == [0, 0, 3456]


def test_llama_server_resumes_a_hybrid_prompt_from_the_checkpoint_before_its_last_micro_batch() -> (
    None
):
    # Checkpoints 4 + n_ubatch and 4 tokens before each prompt's end: a new suffix longer than 4
    # tokens resumes 516 tokens before the end, one longer than 516 from nothing.
    assert sightings("llamacpp", 3700, [16, 16]) == [0, 3700 - 516]
    assert sightings("llamacpp", 3700, [3, 3]) == [0, 3700 - 4]
    assert sightings("llamacpp", 3700, [600, 600]) == [0, 0]


def test_vllm_ends_a_chunk_where_a_shared_prefix_ends_so_the_next_request_resumes_there() -> None:
    # 784-token blocks: the first request's last state (block 4, 3,136 tokens) lies past a
    # 700-token-suffix prefix; the second recomputes from nothing but ends a chunk at the
    # prefix's last block (Marconi admission), where the third resumes.
    assert sightings("vllm", 3700, [700, 700, 700]) == [0, 0, 3000 // 784 * 784]
    # a suffix inside the prompt's last block: the first request's last state is in the shared prefix
    assert sightings("vllm", 3700, [200, 200]) == [0, 3136]


def test_llama_server_keeps_its_checkpoints_in_host_memory_so_the_cache_costs_no_kv_capacity() -> (
    None
):
    from specexp.sim.startup import plan_server

    def capacity(engine: str, caching: bool) -> int:
        spec = prefix_spec(engine=engine)
        spec = spec.model_copy(
            update={"runtime": spec.runtime.model_copy(update={"prefix_caching": caching})}
        )
        return plan_server(spec).memory.kv_cache_tokens

    assert capacity("vllm", True) < capacity(
        "vllm", False
    )  # a state snapshot per chunk in the pool
    assert capacity("llamacpp", True) == capacity("llamacpp", False)


def checkpoint_starts(prompt: int, start: int = 0, user_start: int = 1) -> list[int]:
    """Where llama-server checkpoints a hybrid prompt prefilled alone from `start` (its batches: 2,048
    tokens, broken at the user message and 516 and 4 tokens before the end)."""
    layout = CacheLayout.build(
        enabled=True,
        hits=True,
        block=1,
        max_num_batched_tokens=2048,
        state_bytes=1.0,
        states="prompt_tail",
        tail_tokens=(516, 4),
    )
    taken = []
    while start < prompt:
        n = layout.aligned_chunk(start, min(2048, prompt - start), prompt, user_start=user_start)
        if layout.checkpoint(start, n, prompt, ubatch=512, user_start=user_start):
            taken.append(start)
        start += n
    return taken


def test_llama_server_checkpoints_a_hybrid_prompt_at_its_user_message_and_near_its_end() -> None:
    # as its debug log shows (h200-llamacpp-hybrid-log.txt): at the chat prompt's user message, and before
    # each batch that ends within a micro-batch of the prompt's end; no ordinary mid-prompt batch
    assert checkpoint_starts(3707) == [1, 3191, 3703]
    assert checkpoint_starts(16_007) == [1, 15_491, 16_003]
    assert checkpoint_starts(16_007, user_start=0) == [15_491, 16_003]  # a plain completion
    # a warm prompt restored at its checkpoint takes it again, then the last one
    assert checkpoint_starts(3707, start=3191) == [3191, 3703]


def test_each_checkpoint_copies_the_recurrent_state_so_a_warm_hybrid_request_pays_a_restore_and_two_saves() -> (
    None
):
    from specexp.measure.events import Request
    from specexp.sim.profile import load_profile
    from specexp.sim.startup import start_engine

    def warm_ttft(save: float | None, restore: float | None) -> tuple[float, float]:
        spec = prefix_spec(engine="llamacpp")
        figures = {"checkpoint_save_gbps": save, "checkpoint_restore_gbps": restore}
        _, server = start_engine(spec, load_profile("llamacpp").model_copy(update=figures))
        out = [
            server.run(
                [
                    Request(
                        request_id=f"r{i}",
                        prompt="",
                        prompt_tokens=3707,
                        max_tokens=1,
                        chat=True,
                        cache_group="prefix",
                        shared_prefix_tokens=3707 - 16,
                    )
                ]
            )[0]
            for i in range(2)
        ]
        return out[1].events[0].t - out[1].sent_at, server.layout.state_bytes

    free, state = warm_ttft(None, None)
    assert warm_ttft(1.0, None)[0] - free == pytest.approx(2 * state / 1e9, rel=1e-6)
    assert warm_ttft(None, 1.0)[0] - free == pytest.approx(state / 1e9, rel=1e-6)


@pytest.mark.parametrize(("chat", "saves"), [(True, 3), (False, 2)])
def test_a_cold_hybrid_chat_prompt_is_checkpointed_at_its_user_message_too(
    chat: bool, saves: int
) -> None:
    from specexp.measure.events import Request
    from specexp.sim.profile import load_profile
    from specexp.sim.startup import start_engine

    def cold_ttft(save: float | None) -> tuple[float, float]:
        spec = prefix_spec(engine="llamacpp")
        _, server = start_engine(
            spec, load_profile("llamacpp").model_copy(update={"checkpoint_save_gbps": save})
        )
        (out,) = server.run(
            [Request(request_id="r", prompt="", prompt_tokens=3707, max_tokens=1, chat=chat)]
        )
        return out.events[0].t - out.sent_at, server.layout.state_bytes

    free, state = cold_ttft(None)
    assert cold_ttft(1.0)[0] - free == pytest.approx(saves * state / 1e9, rel=1e-6)


def test_llama_server_checkpoints_a_hybrid_prompt_with_the_prompt_cache_off_too() -> None:
    layout = CacheLayout.build(
        enabled=False,
        hits=True,
        block=1,
        max_num_batched_tokens=2048,
        state_bytes=1.0,
        states="prompt_tail",
        tail_tokens=(516, 4),
    )
    assert layout.aligned_chunk(2048, 1659, 3707, user_start=1) == 3191 - 2048
    assert layout.checkpoint(3191, 512, 3707, ubatch=512, user_start=1)
