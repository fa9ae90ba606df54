"""The workloads with drivers of their own: agentic sessions, trace replay, dataset files.

`drive_special` picks the driver (their input files are checked by specexp.spec.input_files when
the spec is made).
"""

from __future__ import annotations

from collections.abc import Iterator

from specexp.measure.events import Window
from specexp.runtimes.base import Runtime
from specexp.spec.experiment import WorkloadSpec
from specexp.workloads.prompts import PromptBuilder


def drive_special(runtime: Runtime, workload: WorkloadSpec, marker: str, prompt_for: object, chat: bool,
                  warmups: bool) -> Iterator[Window]:
    builder = prompt_for if isinstance(prompt_for, PromptBuilder) else None
    if workload.session is not None:
        from specexp.workloads.sessions import drive_sessions

        yield from drive_sessions(runtime, workload, marker, builder, chat, warmups)
    elif workload.trace_file is not None:
        from specexp.workloads.trace import drive_trace

        yield from drive_trace(runtime, workload, marker, builder, chat, warmups)
    else:
        from specexp.workloads.datasets import drive_dataset

        yield from drive_dataset(runtime, workload, marker, builder, chat, warmups)
