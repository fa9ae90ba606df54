"""The scorer of `specexp_code` (docs/answers.md section 2): lm-eval loads this file, copied as
`utils.py` next to the task's YAML, through `metric: !function utils.pass_at_1`, so it imports
the standard library only (lm-eval runs from its own virtual environment, without specexp).

An answer passes when its code, followed by the problem's assert lines, exits 0 in a separate
`python -I` process (isolated: no user site, no PYTHON* variables, the script's folder not on the
path) in a temporary working directory that is removed afterwards, with an empty environment, its
address space capped where the platform allows, and killed with its whole process group after
TIMEOUT_S. Nothing it needs is on the network. This runs code a model wrote: the task declares
`unsafe_code: true`, so lm-eval runs it only with `--confirm_run_unsafe_code`.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile

TIMEOUT_S = 10.0
"""Seconds a solution and its tests may run, start-up included."""
MEMORY_BYTES = 1 << 30
"""Address space of the process that runs them (RLIMIT_AS, where the platform has it)."""

FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)(?:\n[ \t]*```|\Z)", re.DOTALL)
"""A fenced block, with or without its language, closed or cut off (a stop sequence, the token
limit)."""

PRELUDE = """\
try:
    import resource as _r
    _r.setrlimit(_r.RLIMIT_AS, ({limit}, {limit}))
    del _r
except (ImportError, ValueError, OSError):
    pass
"""


def extract_code(text: str) -> str:
    """The code of an answer: its first fenced block that defines a function, else its first
    fenced block, else the whole text (a completion model's bare code)."""
    blocks = FENCE.findall(text)
    for block in blocks:
        if re.search(r"^\s*def \w", block, re.MULTILINE):
            return block
    return blocks[0] if blocks else text


def run_tests(code: str, tests: str, timeout_s: float = TIMEOUT_S) -> bool:
    """Whether `code` followed by `tests` runs to exit status 0 within `timeout_s`."""
    program = PRELUDE.format(limit=MEMORY_BYTES) + "\n" + code + "\n\n" + tests + "\n"
    with tempfile.TemporaryDirectory(prefix="specexp_code_") as work:
        path = os.path.join(work, "solution.py")
        with open(path, "w", encoding="utf-8") as sink:
            sink.write(program)
        proc = subprocess.Popen(
            [sys.executable, "-I", path],
            cwd=work,
            env={},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            return proc.wait(timeout=timeout_s) == 0
        except subprocess.TimeoutExpired:
            return False
        finally:  # the process and anything it started, whether it finished or not
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()


def pass_at_1(references: list[str], predictions: list[str]) -> float:
    """lm-eval's metric call for one item: 1.0 when the answer passes the item's tests, else 0.0
    (greedy, one answer an item: pass@1)."""
    tests, answer = references[0], predictions[0]
    if isinstance(answer, list):  # a filter that kept every answer: the first one
        answer = answer[0] if answer else ""
    return 1.0 if run_tests(extract_code(str(answer)), str(tests)) else 0.0
