"""The sampled-output check's workload (`workload.samples`, docs/answers.md section 1): each of
`sample_prompts` sampled `samples` times at the workload's temperature and top_p, each request
with a seed of its own, in windows of `concurrency` requests.

The same prompt text goes to every drafter of a sweep (no marker in it: its completions are
compared across runs), while the seeds differ between runs (the drafter and k are part of them),
so the baseline's samples and the drafter's are independent draws, as the test assumes. Each
completion's first `output_tokens` tokens are the generated ids where the engine returns them
(vLLM's `return_token_ids`), else the completion read back with the server's tokenizer (its ids),
else split into words: the last two are a fixed function of the text, so two arms that sample one
distribution of texts give one distribution of these tokens too.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import replace

from specexp.measure.events import Point, Request, RequestTrace, Sampled, Window
from specexp.runtimes.base import Runtime
from specexp.spec.experiment import WorkloadSpec
from specexp.workloads.window import timed, warm_up

WORD = re.compile(r"\S+\s*|\s+")


def sample_seed(marker: str, arm: str, request_id: str) -> int:
    blob = f"{marker}|{arm}|{request_id}".encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:4], "big") & 0x7FFFFFFF


def tokens_of(runtime: Runtime, trace: RequestTrace, positions: int) -> tuple[str, ...]:
    if trace.token_ids:
        return tuple(str(i) for i in trace.token_ids[:positions])
    text = trace.text or ""
    ids = runtime.tokenize(text) if text else []
    pieces = [str(i) for i in ids] if ids is not None else WORD.findall(text)
    return tuple(pieces[:positions])


def drive_samples(
    runtime: Runtime, workload: WorkloadSpec, marker: str, chat: bool, warmups: bool
) -> Iterator[Window]:
    spec = runtime.spec
    arm = f"{spec.drafter.name}:{spec.k}:{spec.draft_model.name if spec.draft_model else ''}"
    prompts = workload.sample_prompts or [workload.prompt]
    requests: list[Request] = []
    keys: dict[str, str] = {}
    for p, text in enumerate(prompts):
        for j in range(workload.samples or 0):
            rid = f"{marker}-p{p}-s{j}"
            keys[rid] = f"p{p}"
            requests.append(
                Request(
                    request_id=rid,
                    prompt=text,
                    prompt_tokens=workload.prompt_tokens,
                    max_tokens=workload.output_tokens,
                    ignore_eos=workload.ignore_eos,
                    temperature=workload.temperature,
                    top_p=workload.top_p,
                    seed=sample_seed(marker, arm, rid),
                    token_ids=True,
                    thinking=workload.thinking,
                    chat=chat,
                )
            )
    seeds = {r.request_id: r.seed or 0 for r in requests}
    concurrency = max(workload.concurrency)
    point = Point(workload.prompt_tokens, concurrency, "cold")
    warm = [replace(r, request_id=f"{r.request_id}-warmup") for r in requests[:concurrency]]
    window = warm_up(runtime, warm, point)
    if warmups:
        yield window
    for repeat, start in enumerate(range(0, len(requests), concurrency)):
        window = timed(runtime, requests[start : start + concurrency], point, repeat=repeat)
        sampled = {
            t.request_id: Sampled(
                keys[t.request_id],
                seeds[t.request_id],
                tokens_of(runtime, t, workload.output_tokens),
            )
            for t in window.traces
            if t.text is not None and t.request_id in keys
        }
        yield replace(window, sampled=sampled)
