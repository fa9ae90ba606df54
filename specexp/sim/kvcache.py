"""The KV cache pool and the prefix cache that lives in it.

Reuse is block-granular: a later request can skip the longest prefix it shares with a cached
one, rounded down to whole cache blocks. Dense models use small blocks (vLLM: 16 tokens).
A drafter that reads the target's hidden states (EAGLE, MTP, DFlash, DSpark) needs the last
matched block recomputed, and vLLM drops it from every hit (FullAttentionManager with use_eagle).
Hybrid models must also restore the linear-attention state where the reuse starts, and the
engine has that state only where a prefill chunk ended on a block boundary: vLLM's align mode
cuts every chunk to whole blocks and ends one chunk at the prompt's last full block (a block
earlier where the drafter's hit is one block shorter), so that the next request can resume
there (Scheduler._mamba_block_aligned_split). Every kept state
occupies pool memory, which is the KV capacity prefix caching costs a hybrid model; dense
models pay nothing. (Qwen3.8-27B: 144 MiB of float32 state per 8,000-token chunk next to 64 KiB
of K/V per token costs 22 % of the capacity, as docs/studies.md reports: 348,497 -> 271,315 tokens.)
A runtime version whose cache never hits keeps the cache (and its cost) but serves nothing.
"""

from __future__ import annotations

import fnmatch
import math
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

from specexp.roofline.shape import CONV_STATE_BYTES, STATE_DTYPE_BYTES, ModelShape

DEFAULT_BLOCK_TOKENS = 16
"""vLLM's default cache block for dense models."""
HybridStates = Literal["align", "chunk_floor", "prompt_tail"]
"""Where a hybrid model keeps its recurrent states (EngineProfile.hybrid_states)."""
CHAT_TURN_TOKENS = 1
"""Prompt tokens before a chat prompt's user message, where llama-server breaks a hybrid model's batch
for a checkpoint: the one token specexp's measured prompts carried before it (h200-llamacpp-hybrid-log.txt:
the first checkpoint of every cold prompt holds 1 token). One user message is assumed: a prompt of several
messages (a system prompt, an agent's turns) has its last user message later, which is not modelled, and
the checkpoint there is charged but not kept for later hits."""


PAGE_ALIGNMENT = 16
"""Tokens an attention block is a multiple of under vLLM's FlashAttention backend (its kernel block
size, MultipleOf(16): docs/engines.md section 1.6)."""


def page_aligned_block(shape: ModelShape, kv_bytes: float, state_dtype: str, k: int) -> int:
    """vLLM's attention block for a hybrid model (_align_hybrid_block_size): the smallest multiple of
    PAGE_ALIGNMENT tokens whose K/V page of one full-attention layer holds one linear-attention layer's
    state, its recurrent state plus its convolution state, which keeps k more tokens with a drafter
    (MambaStateShapeCalculator.gated_delta_net_state_shape). Qwen3.8-27B's shape, float32 state and
    bf16 K/V: 784 tokens without a drafter, 800 with k = 3; vLLM 0.26 logs the same."""
    layers = shape.linear_attention_layers
    if not layers or not shape.full_attention_layers:
        return PAGE_ALIGNMENT
    state = shape.linear_state_elements / layers * STATE_DTYPE_BYTES[state_dtype]
    conv = shape.linear_conv_dim * (shape.linear_conv_width + k) * CONV_STATE_BYTES
    per_token = shape.kv_elements_per_layer * kv_bytes
    return PAGE_ALIGNMENT * math.ceil((state + conv) / (PAGE_ALIGNMENT * per_token))


def block_tokens(
    runtime_block: int | None,
    model_block: int | None,
    model_block_spec: int | None,
    speculative: bool,
) -> int:
    """The cache block: the runtime's setting, else the model's (with or without a drafter), else 16."""
    if runtime_block:
        return runtime_block
    if speculative and model_block_spec:
        return model_block_spec
    return model_block or DEFAULT_BLOCK_TOKENS


def cache_hits(version: str | None, broken: list[str]) -> bool:
    """False when `version` matches one of the runtime versions whose prefix cache never hits."""
    return not (version and any(fnmatch.fnmatchcase(version, pattern) for pattern in broken))


@dataclass(frozen=True)
class CacheLayout:
    """How one server keeps prefixes: block size, state snapshots, and what they cost."""

    enabled: bool
    hits: bool
    block_tokens: int
    chunk_tokens: int
    """Prefill chunk (max_num_batched_tokens cut down to whole blocks): hybrid models keep a
    state at every chunk end."""
    state_bytes: float
    """Recurrent state of one sequence (0 for dense models: no snapshots)."""
    drop_last_block: bool = False
    """A hit gives up its last block, which the drafter needs recomputed (vLLM with a drafter
    that reads the target's hidden states)."""
    states: HybridStates = "align"
    """Where a hybrid model keeps the states a hit resumes from (EngineProfile.hybrid_states)."""
    tail_tokens: tuple[int, ...] = ()
    """prompt_tail: a state is kept this many tokens before every prompt's end."""

    @classmethod
    def build(
        cls,
        *,
        enabled: bool,
        hits: bool,
        block: int,
        max_num_batched_tokens: int,
        state_bytes: float,
        drop_last_block: bool = False,
        states: HybridStates = "align",
        tail_tokens: tuple[int, ...] = (),
    ) -> CacheLayout:
        chunk = max(block, max_num_batched_tokens - max_num_batched_tokens % block)
        return cls(enabled, hits, block, chunk, state_bytes, drop_last_block, states, tail_tokens)

    @property
    def hybrid(self) -> bool:
        return self.state_bytes > 0

    @property
    def kept_state_bytes(self) -> float:
        """Device bytes of one kept state: llama-server copies its checkpoints to host memory
        (common_prompt_checkpoint's std::vector data), the others keep them in the KV pool."""
        return 0.0 if self.states == "prompt_tail" else self.state_bytes

    @property
    def snapshot_bytes_per_token(self) -> float:
        """State snapshots a cached (or running) token carries on average: the capacity cost."""
        return self.kept_state_bytes / self.chunk_tokens if self.enabled and self.hybrid else 0.0

    def snapshots(self, tokens: int) -> int:
        """Device states kept for a prompt of `tokens` tokens: one per chunk end, one at its last block."""
        if (
            not (self.enabled and self.hybrid and self.kept_state_bytes)
            or tokens < self.block_tokens
        ):
            return 0
        return tokens // self.chunk_tokens + 1

    def aligned_chunk(
        self, start: int, tokens: int, prompt: int, junction: int = 0, user_start: int = 0
    ) -> int:
        """Prompt tokens a prefill chunk from `start` may take of the `tokens` its step offers:
        on a hybrid model with the cache on and align states, whole blocks until the last
        cacheable block, and a chunk that would cross it, or the `junction` block where the
        request's KV hit ran past its state hit, ends there (vLLM's align mode and its Marconi
        admission); with prompt_tail states, a chunk that would cross a state's position, or the
        start of the user message, ends there (llama-server breaks its batch for the checkpoint);
        0: it waits for a larger share."""
        if (
            self.hybrid and self.states == "prompt_tail"
        ):  # llama-server checkpoints with the cache off too
            cuts = sorted(
                p
                for p in (*(prompt - t for t in self.tail_tokens), user_start)
                if start < p < start + tokens
            )
            return cuts[0] - start if cuts else tokens
        if not (self.enabled and self.hybrid) or self.states == "chunk_floor":
            return tokens
        block = self.block_tokens
        last = self.last_state_block(prompt) * block
        if start < junction * block < min(start + tokens, last):
            return junction * block - start
        if start + tokens < last:
            return tokens // block * block
        if start < last:
            return last - start
        return tokens

    def checkpoint(
        self, start: int, tokens: int, prompt: int, ubatch: int, user_start: int = 0
    ) -> bool:
        """prompt_tail: whether llama-server takes a context checkpoint of a hybrid sequence before the
        prompt batch of `tokens` from `start` (tools/server/server-context.cpp, before llama_decode):
        once the slot holds tokens, where the batch ends within a micro-batch of the prompt's end, or
        starts the user message (`user_start`, 0: none; a chat prompt's batch breaks there). Other
        mid-prompt batches are skipped ("skip ordinary mid-prompt checkpoints")."""
        if not (self.hybrid and self.states == "prompt_tail") or start == 0:
            return False
        return prompt - (start + tokens) < ubatch or start == user_start

    def kept_states(self, start: int, end: int, prompt: int, junction: int = 0) -> set[int]:
        """Block counts after which a hybrid model keeps the state, for a prefill chunk from
        `start` to `end` of a `prompt`-token prompt (`junction`: as in aligned_chunk)."""
        block = self.block_tokens
        if self.states == "prompt_tail":  # llama-server's context checkpoints, floored to a block
            return {
                (prompt - t) // block
                for t in self.tail_tokens
                if start < prompt - t <= end and prompt - t >= block
            }
        if self.states == "align":  # a state only where the chunk ends, on a block boundary
            return {end // block} if end >= block and end % block == 0 else set()
        # chunk_floor: where the chunk ends, floored to the grid
        kept = {end // block} if end >= block else set()
        return kept | ({junction} if junction and start < junction * block <= end else set())

    def last_state_block(self, prompt: int) -> int:
        """The block count after which a prompt's last cacheable state is kept: its last full
        block, one earlier where a hit drops its last block (so that the same prefix still hits)."""
        blocks = prompt // self.block_tokens
        return max(blocks - 1, 0) if self.drop_last_block else blocks

    def usable_blocks(self, prompt: int, matched: int) -> int:
        """Blocks a prompt of `prompt` tokens may take of the `matched` leading blocks the cache
        holds: never its last token (it must be computed for the logits), and one block fewer
        where the drafter needs it recomputed."""
        n = min(matched, (prompt - 1) // self.block_tokens)
        return max(n - 1, 0) if self.drop_last_block else n


class KvPool:
    """Bytes of the KV pool: held by running sequences, and by cached prompt blocks.

    The one prefix cache: a prompt's full blocks, each named by a key that stands for the
    block and every block before it (chained, as vLLM hashes them), least recently used
    evicted first. A block in use by a running sequence is pinned and never evicted. A block
    of a hybrid model records whether a recurrent-state snapshot was kept at its end: the
    model can resume only there.
    """

    def __init__(self, capacity_bytes: float) -> None:
        self.capacity = capacity_bytes
        self.running = 0.0
        self.cached_bytes = 0.0
        self.blocks: OrderedDict[Hashable, tuple[float, bool]] = OrderedDict()
        """key -> (bytes, state snapshot at its end), least recently used first."""
        self.pins: dict[Hashable, int] = {}

    @property
    def used(self) -> float:
        return self.running + self.cached_bytes

    def __len__(self) -> int:
        return len(self.blocks)

    def match(self, keys: Sequence[Hashable], snapshots_only: bool = False) -> int:
        """Leading blocks of `keys` the cache can serve (touched as recently used); with
        `snapshots_only` the count ends at the last block with a state snapshot."""
        n = usable = 0
        for key in keys:
            entry = self.blocks.get(key)
            if entry is None:
                break
            n += 1
            if entry[1] or not snapshots_only:
                usable = n
        self._touch(keys[:n])
        return usable

    def pin(self, keys: Sequence[Hashable]) -> None:
        for key in keys:
            self.pins[key] = self.pins.get(key, 0) + 1

    def unpin(self, keys: Sequence[Hashable]) -> None:
        for key in keys:
            left = self.pins.get(key, 0) - 1
            if left > 0:
                self.pins[key] = left
            else:
                self.pins.pop(key, None)

    def _evict(self, need: float) -> None:
        """Drop unpinned blocks, least recently used first, until `need` more bytes fit (reading
        only as far into the cache as it has to: a cache of one-token blocks is long)."""
        excess = self.used + need - self.capacity
        if excess <= 0:
            return
        victims = []
        for key, (nbytes, _) in self.blocks.items():
            if key in self.pins:
                continue
            victims.append(key)
            excess -= nbytes
            if excess <= 0:
                break
        for key in victims:
            self.cached_bytes -= self.blocks.pop(key)[0]

    def reserve(self, need: float) -> bool:
        """Hold `need` bytes for a running sequence, evicting cached blocks if needed."""
        self._evict(need)
        if self.used + need > self.capacity:
            return False
        self.running += need
        return True

    def release(self, held: float) -> None:
        self.running = max(0.0, self.running - held)

    def insert(
        self,
        keys: Sequence[Hashable],
        block_bytes: float,
        snapshot_bytes: float = 0.0,
        snapshots: frozenset[int] | None = None,
        from_running: float = 0.0,
    ) -> tuple[list[Hashable], float]:
        """Cache the blocks `keys` (a prompt's full blocks, in order) and pin them.

        `snapshots` holds the block counts i whose block i-1 ends with a state snapshot (None:
        every block can be resumed from, as on a dense model); a snapshot adds `snapshot_bytes`.
        A new block's bytes move from the running sequence's hold (up to `from_running`), so
        a prompt is never counted twice. Returns (the keys pinned, bytes moved)."""
        moved, pinned = 0.0, []
        for i, key in enumerate(keys, start=1):
            snap = snapshots is None or i in snapshots
            old = self.blocks.get(key)
            if old is not None:
                if snap and not old[1]:
                    self.blocks[key] = (old[0] + snapshot_bytes, True)
                    self.cached_bytes += snapshot_bytes
            else:
                nbytes = block_bytes + (snapshot_bytes if snapshots is not None and snap else 0.0)
                take = min(nbytes, max(from_running - moved, 0.0))
                self._evict(nbytes - take)
                if self.used - take + nbytes > self.capacity:
                    break
                moved += take
                self.running -= take
                self.blocks[key] = (nbytes, snap)
                self.cached_bytes += nbytes
            self.pin((key,))  # at once: making room for the next block must not evict this one
            pinned.append(key)
        self._touch(pinned)
        return pinned, moved

    def _touch(self, keys: Sequence[Hashable]) -> None:
        # Tail blocks first, so that a prefix's leading blocks are the last to be evicted
        # (vLLM frees a request's blocks in reverse order for the same reason).
        for key in reversed(keys):
            self.blocks.move_to_end(key)

    def clear(self) -> None:
        """Empty the cache of every block no running sequence uses."""
        for key in [key for key in self.blocks if key not in self.pins]:
            self.cached_bytes -= self.blocks.pop(key)[0]
