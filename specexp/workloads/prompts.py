"""Prompt text for real servers: material cut to exact token lengths with the server's tokenizer.

Layout: a unique marker first (a digest of the request id, so that requests differ from their
first token and no cache can serve them), the material, then the
instruction. Cache-reuse workloads put the shared material first and the marker after it, so
the cold and warm requests of one group share exactly the material's tokens.

Where the server can count a request's prompt as it will be sent (`Runtime.count_prompt`: the
chat template and its special tokens included), the material is cut until the whole prompt is the
promised length: the marker, instruction and template first take an estimate of
`TEMPLATE_ESTIMATE` tokens, then the material moves by what the server counted over or under, a
few times at most (a cut can merge with its neighbours into fewer tokens). A prompt is never made
longer than promised where a shorter one can be had. A cache group's material is fitted on its
first request and shared by the rest as it is. Without a count, the estimate stands.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from specexp.spec.experiment import WorkloadSpec
from specexp.workloads.material import filler, prose, source_file

Tokenize = Callable[[str], "list[int] | None"]
Detokenize = Callable[[list[int]], "str | None"]
CountPrompt = Callable[[str], "int | None"]
"""The server's count of a prompt text sent as this workload's requests are (template included)."""

TEMPLATE_ESTIMATE = 16
"""Tokens taken for the marker, the blank lines and the chat template before the server counts."""
FIT_ROUNDS = 4
"""Most recounts of one prompt."""


class PromptBuilder:
    """Builds each request's prompt; cuts material to token lengths when a tokenizer is there."""

    def __init__(
        self,
        workload: WorkloadSpec,
        tokenize: Tokenize | None,
        detokenize: Detokenize | None,
        count_prompt: CountPrompt | None = None,
    ) -> None:
        self.workload = workload
        self.tokenize = tokenize
        self.detokenize = detokenize
        self.count_prompt = count_prompt
        self._cut: dict[tuple[str, int], str] = {}
        self._group_budget: dict[str, int] = {}

    def __call__(self, request_id: str, tokens: int, group: str | None, prefix_tokens: int) -> str:
        w = self.workload
        unique = hashlib.sha256(request_id.encode()).hexdigest()[:12]
        if w.material == "none":
            return f"[{unique}] {w.prompt}"
        key = group if group is not None else request_id
        if group is not None and group in self._group_budget:
            return self._layout(unique, self.material(key, self._group_budget[group]), group)
        budget = max(tokens - self._count(w.prompt) - TEMPLATE_ESTIMATE, 1)
        prompt, budget = self._fit_prompt(unique, key, group, budget, tokens)
        if group is not None:
            self._group_budget[group] = budget
        return prompt

    def _layout(self, unique: str, material: str, group: str | None) -> str:
        if group is not None:
            return f"{material}\n\n[{unique}] {self.workload.prompt}"
        return f"[{unique}]\n{material}\n\n{self.workload.prompt}"

    def _fit_prompt(
        self, unique: str, key: str, group: str | None, budget: int, tokens: int
    ) -> tuple[str, int]:
        """The prompt whose server count is `tokens`, or the closest under it (else over it) that
        `FIT_ROUNDS` recounts found; and the material budget that made it."""
        prompt = self._layout(unique, self.material(key, budget), group)
        if self.count_prompt is None:
            return prompt, budget
        tried: dict[int, tuple[int, str]] = {}
        for _ in range(FIT_ROUNDS):
            counted = self.count_prompt(prompt)
            if counted is None:
                return prompt, budget
            tried[budget] = (counted, prompt)
            if counted == tokens:
                break
            budget = max(budget + tokens - counted, 1)
            if budget in tried:  # the cut merges with its neighbours: no closer length to have
                break
            prompt = self._layout(unique, self.material(key, budget), group)
        under = [(c, b) for b, (c, _) in tried.items() if c <= tokens]
        best = max(under) if under else min((c, b) for b, (c, _) in tried.items())
        return tried[best[1]][1], best[1]

    def material(self, key: str, tokens: int) -> str:
        """Material of `tokens` tokens (by the server's count where it can count)."""
        kind = self.workload.material
        if kind == "source_file":
            source = source_file()
        elif kind == "prose":
            source = prose(key, tokens)  # a word is at least one token: enough to cut from
        else:
            source = filler(key, tokens * 2)
        cache_key = (key if kind != "source_file" else "source_file", tokens)
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
