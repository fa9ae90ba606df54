"""Input files of workloads, read and checked before anything runs: traces and datasets.

`check_files` is called when a spec is made (specexp.run.compose), so a missing file, a malformed
line or an unknown shape is a one-line error naming the file, the line and what was expected.
The drivers (specexp.workloads.trace, specexp.workloads.datasets) read the files with the same
functions.

Traces are JSONL, one request a line, in Mooncake's shape: `timestamp`, `input_length`,
`output_length`, optional `hash_ids`. Datasets are ShareGPT-style JSON (a list of
`{"conversations": [{"from": "human", "value": ...}, ...]}`, optional `category`) or JSONL with
one `{"prompt": ..., "category": ...}` a line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from specexp.spec.errors import SpecError
from specexp.spec.experiment import WorkloadSpec

T = TypeVar("T")


def resolve_file(path: str) -> Path:
    """`path` as given (absolute, or from the working directory); a relative `conf/...` path that is
    not there is looked up in specexp's own conf/ (the shipped example files)."""
    given = Path(path)
    if given.is_file() or given.is_absolute() or given.parts[:1] != ("conf",):
        return given
    from specexp.spec.paths import conf_dir

    shipped = conf_dir().joinpath(*given.parts[1:])
    return shipped if shipped.is_file() else given


def check_files(workload: WorkloadSpec) -> None:
    """Raise SpecError for a workload whose file is missing or malformed, or that asks for two
    drivers at once."""
    chosen = [
        k for k in ("session", "trace_file", "dataset_file") if getattr(workload, k) is not None
    ]
    if len(chosen) > 1:
        raise SpecError(
            f"workload {workload.name}", chosen[1], f"cannot be combined with workload.{chosen[0]}"
        )
    if workload.trace_file is not None:
        load_trace(workload.trace_file)
    if workload.dataset_file is not None:
        load_dataset(workload.dataset_file)


EXPECTED = (
    'a JSON object {"timestamp": number, "input_length": int >= 1, "output_length": int >= 1, '
    '"hash_ids": [int, ...] (optional)}'
)


@dataclass(frozen=True)
class TraceRow:
    timestamp: float
    input_length: int
    output_length: int
    hash_ids: tuple[int, ...] = ()


def load_trace(path: str) -> list[TraceRow]:
    """Every row of the trace at `path`; SpecError naming the file and line on bad input."""
    file = resolve_file(path)
    if not file.is_file():
        raise SpecError(
            str(path), "workload.trace_file", "no such file (a JSONL trace: one request a line)"
        )
    rows = _each_line(file.read_text(encoding="utf-8"), path, _row)
    if not rows:
        raise SpecError(
            str(path),
            "workload.trace_file",
            f"the trace has no requests; each line must be {EXPECTED}",
        )
    return rows


def _each_line(text: str, path: str, parse: Callable[[str, str], T]) -> list[T]:
    """`parse(line, "path:line")` of every non-blank line of a JSONL file."""
    return [
        parse(line, f"{path}:{n}")
        for n, line in enumerate(text.splitlines(), start=1)
        if line.strip()
    ]


def _row(line: str, where: str) -> TraceRow:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as err:
        raise SpecError(where, "line", f"not JSON ({err.msg}); expected {EXPECTED}") from None
    if not isinstance(data, dict):
        raise SpecError(where, "line", f"expected {EXPECTED}")
    for key in ("timestamp", "input_length", "output_length"):
        value = data.get(key)
        if key not in data:
            raise SpecError(where, key, f"missing; expected {EXPECTED}")
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or (key != "timestamp" and (value != int(value) or value < 1))
        ):
            raise SpecError(where, key, f"got {value!r}; expected {EXPECTED}")
    hashes = data.get("hash_ids", [])
    if not isinstance(hashes, list) or any(
        isinstance(h, bool) or not isinstance(h, int) for h in hashes
    ):
        raise SpecError(where, "hash_ids", f"got {hashes!r}; expected a list of integers")
    return TraceRow(
        float(data["timestamp"]),
        int(data["input_length"]),
        int(data["output_length"]),
        tuple(hashes),
    )


ROLES = {
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
    "chatgpt": "assistant",
    "bing": "assistant",
    "bard": "assistant",
    "model": "assistant",
    "system": "system",
}
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class DatasetPrompt:
    messages: tuple[tuple[str, str], ...]
    category: str

    @property
    def text(self) -> str:
        return "\n\n".join(content for _, content in self.messages)

    @property
    def tokens(self) -> int:
        """Estimated length (the server counts it for real)."""
        return max(1, len(self.text) // CHARS_PER_TOKEN)


SHAPES = (
    'ShareGPT JSON [{"conversations": [{"from": "human", "value": "..."}, ...]}, ...] or JSONL '
    'lines {"prompt": "...", "category": "..."}'
)


def load_dataset(path: str) -> list[DatasetPrompt]:
    """Every prompt of the file at `path`; SpecError naming the file (and line) on bad input."""
    file = resolve_file(path)
    if not file.is_file():
        raise SpecError(str(path), "workload.dataset_file", f"no such file; expected {SHAPES}")
    text = file.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as err:
            raise SpecError(
                f"{path}:{err.lineno}", "file", f"not JSON ({err.msg}); expected {SHAPES}"
            ) from None
        prompts = [_sharegpt(item, f"{path}: item {i}") for i, item in enumerate(items)]
    else:
        prompts = _each_line(text, path, _jsonl)
    if not prompts:
        raise SpecError(str(path), "workload.dataset_file", f"no prompts; expected {SHAPES}")
    return prompts


def _sharegpt(item: object, where: str) -> DatasetPrompt:
    turns = item.get("conversations") if isinstance(item, dict) else None
    if not isinstance(item, dict) or not isinstance(turns, list) or not turns:
        raise SpecError(where, "conversations", f"missing or empty; expected {SHAPES}")
    messages = []
    for j, turn in enumerate(turns):
        # ShareGPT's {"from", "value"}, or OpenAI's {"role", "content"}
        role = (
            ROLES.get(str(turn.get("from", turn.get("role", ""))).lower())
            if isinstance(turn, dict)
            else None
        )
        value = turn.get("value", turn.get("content")) if isinstance(turn, dict) else None
        if role is None or not isinstance(value, str):
            raise SpecError(
                where, f"conversations[{j}]", 'expected {"from": "human" or "gpt", "value": "text"}'
            )
        messages.append((role, value))
    while messages and messages[-1][0] != "user":  # send up to the last human message
        messages.pop()
    if not messages:
        raise SpecError(where, "conversations", "no human message to send")
    category = item.get("category", "sharegpt")
    return DatasetPrompt(tuple(messages), str(category))


def _jsonl(line: str, where: str) -> DatasetPrompt:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as err:
        raise SpecError(where, "line", f"not JSON ({err.msg}); expected {SHAPES}") from None
    if not isinstance(data, dict) or not isinstance(data.get("prompt"), str) or not data["prompt"]:
        raise SpecError(where, "prompt", f"missing or not text; expected {SHAPES}")
    return DatasetPrompt((("user", data["prompt"]),), str(data.get("category") or "uncategorized"))
