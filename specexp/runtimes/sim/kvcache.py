"""The KV cache pool and the prefix cache that lives in it.

Reuse is block-granular: a later request can skip the longest prefix it shares with a cached
one, rounded down to whole cache blocks. Dense models use small blocks (vLLM: 16 tokens).
Hybrid models must also restore the linear-attention state where the reuse starts, and the
engine keeps that state only at block-aligned points: at the end of every prefill chunk (the
chunk is cut on a block boundary) and at the last full block of each prompt. Every kept state
occupies pool memory, which is the KV capacity prefix caching costs a hybrid model; dense
models pay nothing. (Qwen3.8-27B: 144 MiB of float32 state per 8,000-token chunk next to 64 KiB
of K/V per token costs 22 % of the capacity, as studies.md reports: 348,497 -> 271,315 tokens.)
A runtime version whose cache never hits keeps the cache (and its cost) but serves nothing.
"""

from __future__ import annotations

import fnmatch
from collections import OrderedDict
from dataclasses import dataclass

DEFAULT_BLOCK_TOKENS = 16
"""vLLM's default cache block for dense models."""


def block_tokens(runtime_block: int | None, model_block: int | None, model_block_spec: int | None,
                 speculative: bool) -> int:
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

    @classmethod
    def build(cls, *, enabled: bool, hits: bool, block: int, max_num_batched_tokens: int,
              state_bytes: float) -> CacheLayout:
        chunk = max(block, max_num_batched_tokens - max_num_batched_tokens % block)
        return cls(enabled, hits, block, chunk, state_bytes)

    @property
    def hybrid(self) -> bool:
        return self.state_bytes > 0

    @property
    def snapshot_bytes_per_token(self) -> float:
        """State snapshots a cached (or running) token carries on average: the capacity cost."""
        return self.state_bytes / self.chunk_tokens if self.enabled and self.hybrid else 0.0

    def snapshots(self, tokens: int) -> int:
        """States kept for a prompt of `tokens` tokens: one per chunk end, one at its last block."""
        if not (self.enabled and self.hybrid) or tokens < self.block_tokens:
            return 0
        return tokens // self.chunk_tokens + 1

    def reusable(self, stored_prefix: int, stored_prompt: int, shared: int, prompt: int) -> int:
        """Prompt tokens a request can skip, given the group's cached prefix and prompt."""
        if not (self.enabled and self.hits):
            return 0
        limit = min(stored_prefix, shared, prompt - 1)
        aligned = max(limit - limit % self.block_tokens, 0)
        if not self.hybrid:
            return aligned
        last_block = stored_prompt - stored_prompt % self.block_tokens
        if last_block <= aligned:
            return last_block
        return aligned - aligned % self.chunk_tokens


class KvPool:
    """Bytes of the KV pool held by running sequences and by cached prefixes (LRU)."""

    def __init__(self, capacity_bytes: float) -> None:
        self.capacity = capacity_bytes
        self.running = 0.0
        self.cached: OrderedDict[str, tuple[int, int, float]] = OrderedDict()
        """group -> (prefix tokens, prompt tokens, bytes), least recently used first."""
        self.pinned: dict[str, int] = {}

    @property
    def used(self) -> float:
        return self.running + sum(entry[2] for entry in self.cached.values())

    def lookup(self, group: str) -> tuple[int, int] | None:
        entry = self.cached.get(group)
        if entry is None:
            return None
        self.cached.move_to_end(group)
        return entry[0], entry[1]

    def reserve(self, need: float, pin: str | None = None) -> bool:
        """Hold `need` bytes for a running sequence, evicting unpinned cached prefixes if needed."""
        if pin is not None and pin in self.cached:
            self.pinned[pin] = self.pinned.get(pin, 0) + 1
        for group in list(self.cached):
            if self.used + need <= self.capacity:
                break
            if not self.pinned.get(group):
                del self.cached[group]
        if self.used + need > self.capacity:
            if pin is not None and self.pinned.get(pin):
                self.pinned[pin] -= 1
            return False
        self.running += need
        return True

    def release(self, held: float, pin: str | None = None) -> None:
        self.running = max(0.0, self.running - held)
        if pin is not None and self.pinned.get(pin):
            self.pinned[pin] -= 1

    def store(self, group: str, prefix: int, prompt: int, nbytes: float) -> None:
        """Keep a finished request's prefix, if it fits after evicting older unpinned ones."""
        old = self.cached.pop(group, None)
        if old is not None and old[0] >= prefix:
            self.cached[group] = old
            return
        for other in list(self.cached):
            if self.used + nbytes <= self.capacity:
                break
            if not self.pinned.get(other):
                del self.cached[other]
        if self.used + nbytes <= self.capacity:
            self.cached[group] = (prefix, prompt, nbytes)

    def clear(self) -> None:
        for group in list(self.cached):
            if not self.pinned.get(group):
                del self.cached[group]
