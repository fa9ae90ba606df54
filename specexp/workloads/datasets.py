"""Prompts from a local file (workload.dataset_file), measured category by category.

Two shapes are read:
- ShareGPT-style JSON: a list of `{"conversations": [{"from": "human", "value": ...}, ...]}`
  (optional `"category"` per item, else `sharegpt`); the conversation up to its last human
  message is sent, earlier replies included;
- JSONL, one prompt a line: `{"prompt": ..., "category": ...}` (`category` optional:
  `uncategorized`).

Each category is its own measurement point (condition `category`): its prompts are sent
`concurrency` at a time, the engine counters read around each window, so every category gets
its own acceptance. A prompt's length is the server's count (the simulator: characters / 4).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator

from specexp.measure.events import Point, Request, Window
from specexp.runtimes.base import Runtime
from specexp.spec.experiment import WorkloadSpec
from specexp.spec.input_files import DatasetPrompt, load_dataset
from specexp.workloads.prompts import PromptBuilder
from specexp.workloads.window import opening_warm_up, repeats_by_concurrency, timed, warmup_tokens


def by_category(prompts: list[DatasetPrompt]) -> dict[str, list[DatasetPrompt]]:
    """Prompts grouped by category, in the order categories first appear."""
    groups: dict[str, list[DatasetPrompt]] = {}
    for p in prompts:
        groups.setdefault(p.category, []).append(p)
    return groups


def drive_dataset(
    runtime: Runtime,
    workload: WorkloadSpec,
    marker: str,
    builder: PromptBuilder | None,
    chat: bool,
    warmups: bool,
) -> Iterator[Window]:
    assert workload.dataset_file is not None
    groups = by_category(load_dataset(workload.dataset_file))
    first = next(iter(groups.values()))[0]
    yield from opening_warm_up(
        runtime,
        workload,
        lambda i: _request(workload, f"{marker}-warmup-{i}", first, chat, warmup=True),
        first.tokens,
        warmups,
    )
    for category, prompts in groups.items():
        tokens = int(statistics.median(p.tokens for p in prompts))
        for concurrency, repeat in repeats_by_concurrency(workload):
            for start in range(0, len(prompts), concurrency):
                batch = prompts[start : start + concurrency]
                reqs = [
                    _request(
                        workload,
                        f"{marker}-{category}-c{concurrency}-r{repeat}-{start + i}",
                        p,
                        chat,
                    )
                    for i, p in enumerate(batch)
                ]
                yield timed(  # a last batch shorter than the concurrency is a point of its own
                    runtime,
                    reqs,
                    Point(tokens, len(batch), "cold", category=category),
                    repeat=repeat,
                )


def _request(
    workload: WorkloadSpec, rid: str, p: DatasetPrompt, chat: bool, warmup: bool = False
) -> Request:
    return Request(
        request_id=rid,
        prompt=p.text,
        prompt_tokens=p.tokens,
        max_tokens=warmup_tokens(workload) if warmup else workload.output_tokens,
        ignore_eos=workload.ignore_eos,
        temperature=workload.temperature,
        thinking=workload.thinking,
        chat=chat,
        messages=p.messages if chat else None,
    )
