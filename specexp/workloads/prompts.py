"""Prompt text for real servers: material cut to exact token lengths with the server's tokenizer.

Layout: a unique marker first (a digest of the request id, so that requests differ from their
first token and no cache can serve them), the material, then the
instruction. Cache-reuse workloads put the shared material first and the marker after it, so
the cold and warm requests of one group share exactly the material's tokens.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from specexp.spec.experiment import WorkloadSpec
from specexp.workloads.material import filler, source_file

Tokenize = Callable[[str], "list[int] | None"]
Detokenize = Callable[[list[int]], "str | None"]


class PromptBuilder:
    """Builds each request's prompt; cuts material to token lengths when a tokenizer is there."""

    def __init__(
        self, workload: WorkloadSpec, tokenize: Tokenize | None, detokenize: Detokenize | None
    ) -> None:
        self.workload = workload
        self.tokenize = tokenize
        self.detokenize = detokenize
        self._cut: dict[tuple[str, int], str] = {}

    def __call__(self, request_id: str, tokens: int, group: str | None, prefix_tokens: int) -> str:
        w = self.workload
        unique = hashlib.sha256(request_id.encode()).hexdigest()[:12]
        if w.material == "none":
            return f"[{unique}] {w.prompt}"
        budget = max(tokens - self._count(w.prompt) - 16, 1)
        key = group if group is not None else request_id
        text = self.material(key, budget)
        if group is not None:
            return f"{text}\n\n[{unique}] {w.prompt}"
        return f"[{unique}]\n{text}\n\n{w.prompt}"

    def material(self, key: str, tokens: int) -> str:
        """Material of `tokens` tokens (by the server's count where it can count)."""
        source = (
            source_file() if self.workload.material == "source_file" else filler(key, tokens * 2)
        )
        cache_key = (key if self.workload.material == "filler" else "source_file", tokens)
        if cache_key not in self._cut:
            self._cut[cache_key] = self._fit(source, tokens)
        return self._cut[cache_key]

    def _count(self, text: str) -> int:
        ids = self.tokenize(text) if self.tokenize else None
        return len(ids) if ids is not None else max(1, len(text) // 4)

    def _fit(self, text: str, tokens: int) -> str:
        """`text` cut to `tokens` of the server's tokens (by characters without a tokenizer)."""
        ids = self.tokenize(text) if self.tokenize else None
        if ids is None:
            return text[: tokens * 4]
        if len(ids) <= tokens:
            return text
        cut = self.detokenize(ids[:tokens]) if self.detokenize else None
        if cut is None:
            ratio = len(text) / max(len(ids), 1)
            return text[: int(tokens * ratio)]
        return cut
