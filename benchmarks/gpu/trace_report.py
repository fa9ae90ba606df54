"""The llama-server trace of benchmarks/gpu/llamacpp_trace.py, as a report and a calibration data file.

- benchmarks/results/llamacpp-trace.md: llama-batched-bench's prefill of B prompts at once (one KV
  stream per sequence, one unified stream, one prompt of the same length), and, per concurrency of
  the specexp sweeps, when each request's first token came (grouped by the step that produced it),
  the slots that held the requests (a break in their ids splits llama.cpp's micro-batches), TTFT
  and TPOT, with one KV stream per slot and with --kv-unified;
- benchmarks/data/h200-llamacpp-trace.jsonl: each measurement of the sweeps, one JSON object a line,
  in the form of gpu-h200-llamacpp.jsonl (`part` decode for the one-stream-per-slot server that
  runtime=llamacpp starts, decode-kv-unified for the other), then the batched-bench rows;
- `trace_report.py --holdout | --slots | --c32 | --chunks | --repeats | --prefix | --hybrid | --bursts RECORDS.tar.gz`: the data files of the
  later device calls (llamacpp_h200.py --parts ...), each from its sweeps' records (DATA_FILES).

Each result.json is read as a `RunRecord`; a data line's `measured` is its Measurement's
`model_dump(mode="json")`, the record's own form. requests.jsonl rows stay plain dicts (no typed model).
"""

from __future__ import annotations

import json
import re
import tarfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from specexp.record import RunRecord
from specexp.spec.vocabulary import C, M

REPO = Path(__file__).resolve().parents[2]
LAUNCH = re.compile(r"^\S+ I slot launch_slot_: id\s+(\d+) \| task (\d+)")


def _members(tar_path: Path) -> dict[str, bytes]:
    with tarfile.open(tar_path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def _sweep(files: dict[str, bytes], name: str) -> tuple[RunRecord, list[dict[str, Any]], list[int]]:
    """(result.json, requests.jsonl rows, the slot of each task in launch order) of one sweep."""
    prefix = f"trace/sweeps/{name}/"
    job = next(
        k.rsplit("/", 1)[0] for k in files if k.startswith(prefix) and k.endswith("/result.json")
    )
    result = RunRecord.model_validate_json(files[f"{job}/result.json"])
    requests = [
        json.loads(line)
        for line in files[f"{job}/requests.jsonl"].decode().splitlines()
        if line.strip()
    ]
    tasks = {}
    for line in files.get(f"{job}/server.log", b"").decode(errors="replace").splitlines():
        if m := LAUNCH.match(line):
            tasks[int(m[2])] = int(m[1])
    return result, requests, [tasks[t] for t in sorted(tasks)]


def _bench(files: dict[str, bytes], name: str) -> list[dict[str, Any]]:
    text = files.get(f"trace/bench-{name}.jsonl", b"").decode()
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def _windows(requests: list[dict[str, Any]], slots: list[int]) -> list[dict[str, Any]]:
    """Per measured window: first-token times after the first send (ms), slots, TTFT, TPOT."""
    grouped: dict[tuple[int, int, bool], list[tuple[dict[str, Any], int]]] = defaultdict(list)
    # windows are closed bursts run one after another, so the n-th launched task belongs to the n-th
    # request's window (within a window the pairing may differ; only the window's set of slots is used)
    for request, slot in zip(requests, slots, strict=False):
        grouped[(request[C.concurrency], request["repeat"], request["warmup"])].append(
            (request, slot)
        )
    out = []
    for (c, repeat, warmup), rows in grouped.items():
        if warmup:
            continue
        t0 = min(r["sent_at"] for r, _ in rows)
        first = sorted((r["sent_at"] - t0 + r[M.ttft_s]) * 1e3 for r, _ in rows)
        ids = sorted(s for _, s in rows)
        out.append(
            {
                "c": c,
                "repeat": repeat,
                "first_tokens_ms": first,
                "slots": ids,
                "slot_runs": 1 + sum(b != a + 1 for a, b in zip(ids, ids[1:], strict=False)),
                "ttft_ms": 1e3 * sum(r[M.ttft_s] for r, _ in rows) / len(rows),
                "tpot_ms": 1e3 * sum(r[M.tpot_s] for r, _ in rows) / len(rows),
            }
        )
    return out


def _steps(first_ms: list[float], gap_ms: float = 15.0) -> str:
    """First tokens grouped by the step that produced them: "98 ms x3, 205 ms x3, ..."."""
    groups: list[list[float]] = []
    for t in first_ms:
        if groups and t - groups[-1][-1] <= gap_ms:
            groups[-1].append(t)
        else:
            groups.append([t])
    return ", ".join(f"{g[0]:.0f}{f' x{len(g)}' if len(g) > 1 else ''}" for g in groups)


def record_lines(result: RunRecord, part: str) -> list[str]:
    """One line per measurement of a result.json, in the form of gpu-h200-llamacpp.jsonl."""
    facts = result.provenance.engine_info
    info = facts.model_dump(exclude_unset=True) if facts is not None else {}  # the keys it reported
    return [
        json.dumps(
            {
                "part": part,
                "status": result.status,
                "engine_info": info,
                "server_argv": result.provenance.server_argv,
                "measured": measurement.model_dump(mode="json"),
            },
            sort_keys=True,
        )
        for measurement in result.measurements
    ]


REPEATS = ("host-slots-1", "host-chunks-1", "host-slots-2", "host-chunks-2")
C32 = (
    "decode-c32-ctx2048",
    "decode-c32-ctx1024",
    "decode-c32-ctx2048-again",
    "decode-c32-ctx1024-again",
)
DATA_FILES: dict[str, tuple[str, dict[str, str] | None]] = {
    # cells the fit never saw: c = 4, 12, 24, 1,024-token prompts (the third call of the trace work)
    "--holdout": ("h200-llamacpp-holdout.jsonl", None),
    # pure decode by the number of slots, as runtime=llamacpp runs llama-server (fitted) and with
    # GGML_CUDA_DISABLE_GRAPHS=1 (llamacpp_h200.py --parts decode-slots decode-slots-no-graphs)
    "--slots": (
        "h200-llamacpp-slots.jsonl",
        {"decode-slots": "decode", "decode-slots-no-graphs": "decode-no-cuda-graphs"},
    ),
    # one cell on four servers, 2,048 and 1,024 tokens of context per slot in turn, in the order they ran
    "--c32": ("h200-llamacpp-c32.jsonl", dict.fromkeys(C32, "decode")),
    # the trace's decode job again, every token's arrival time in its requests.jsonl (--parts decode-chunks)
    "--chunks": ("h200-llamacpp-chunks.jsonl", None),
    # pure decode by the number of slots and the trace's decode job, in turn, twice, on one machine
    # (--parts host-slots-1 host-chunks-1 host-slots-2 host-chunks-2)
    "--repeats": ("h200-llamacpp-repeats.jsonl", dict.fromkeys(REPEATS, "decode")),
    # the prefix_cache workload at 3.7k, 16k and 32k tokens, cold then warm (--parts prefix-cache)
    "--prefix": ("h200-llamacpp-prefix.jsonl", {"prefix-cache": "prefix"}),
    # the hybrid Qwen3.8-27B shape: prefix_cache cold then warm, then decode (--parts hybrid-prefix-cache hybrid-decode)
    "--hybrid": (
        "h200-llamacpp-hybrid.jsonl",
        {"hybrid-prefix-cache": "prefix", "hybrid-decode": "decode"},
    ),
    # 32-token prompts, 64 tokens out, at concurrency 1, 8 and 32: a burst's TTFT is almost all fixed
    # costs (--parts short-bursts)
    "--bursts": ("h200-llamacpp-bursts.jsonl", {"short-bursts": "decode"}),
}
"""Option -> (benchmarks/data file, the sweeps it takes in order and the record part of each; None:
every sweep, in name order, as part decode)."""


def write_data(tar_path: Path, option: str) -> Path:
    """The benchmarks/data file of `option` (DATA_FILES) from a device call's records.tar.gz."""
    file_name, parts = DATA_FILES[option]
    results = [
        (name.split("/")[1], RunRecord.model_validate_json(blob))
        for name, blob in sorted(_members(tar_path).items())
        if name.endswith("/result.json")
    ]
    order = parts or dict.fromkeys((sweep for sweep, _ in results), "decode")
    lines = [
        line
        for sweep, part in order.items()
        for name, result in results
        if name == sweep
        for line in record_lines(result, part)
    ]
    path = REPO / "benchmarks/data" / file_name
    path.write_text("\n".join(lines) + "\n")
    return path


def write(tar_path: Path, log_path: Path | None = None) -> list[Path]:
    files = _members(tar_path)
    data_lines, md = (
        [],
        [
            "# llama-server on an H200: where concurrent prompts spend their time",
            "",
            "Written by `benchmarks/gpu/llamacpp_trace.py` (on the device) and `--report` (here). "
            "llama.cpp commit 0c1e57098 with CUDA for sm_90, the Qwen3-8B shape in BF16 with random "
            "weights, `-ngl all`, `--cache-ram 0`, 32 slots, n_batch 2048, n_ubatch 512.",
            "",
        ],
    )
    streams, unified, single = (
        _bench(files, "streams"),
        _bench(files, "unified"),
        _bench(files, "single"),
    )
    md += [
        "## llama-batched-bench: B prompts of 519 tokens prefilled at once",
        "",
        "T_PP in ms. The first row of each run carries the run's warm-up. *single*: one prompt of "
        "B x 519 tokens.",
        "",
        "| B | tokens | one KV stream per sequence | unified KV (-kvu) | single prompt |",
        "|---:|---:|---:|---:|---:|",
    ]
    single_by_tokens = {row["pp"]: row for row in single}
    for row in streams:
        pl = row["pl"]
        uni = next((u for u in unified if u["pl"] == pl), None)
        one = (
            single_by_tokens.get(min(single_by_tokens, key=lambda n: abs(n - pl * row["pp"])))
            if single
            else None
        )
        md.append(
            f"| {pl} | {pl * row['pp']:,} | {row['t_pp'] * 1e3:.1f} | {uni['t_pp'] * 1e3:.1f} | "
            if uni
            else f"| {pl} | {pl * row['pp']:,} | {row['t_pp'] * 1e3:.1f} | – | "
        )
        md[-1] += f"{one['t_pp'] * 1e3:.1f} ({one['pp']:,}) |" if one else "– |"
    for part, name in (("decode", "streams"), ("decode-kv-unified", "unified")):
        result, requests, slots = _sweep(files, name)
        data_lines += record_lines(result, part)
        md += [
            "",
            f"## specexp against llama-server, {'one KV stream per slot (as runtime=llamacpp starts it)' if name == 'streams' else 'with --kv-unified'}",
            "",
            "512-token prompts (519 with the template), 32 tokens out, three repeats, cold. First tokens: "
            "ms after the window's first request was sent, grouped by the step that produced them.",
            "",
            "| c | repeat | TTFT mean ms | TPOT ms | slot runs | first tokens (ms x count) |",
            "|---:|---:|---:|---:|---:|---|",
        ]
        for w in _windows(requests, slots):
            md.append(
                f"| {w['c']} | {w['repeat']} | {w['ttft_ms']:.0f} | {w['tpot_ms']:.1f} | {w['slot_runs']} | "
                f"{_steps(w['first_tokens_ms'])} |"
            )
    for row in (*streams, *unified, *single):
        data_lines.append(json.dumps({"part": "batched-bench", "measured": row}, sort_keys=True))
    if log_path is not None and log_path.is_file():
        md += ["", "## Device log", "", "```", log_path.read_text().strip(), "```"]
    data = REPO / "benchmarks/data/h200-llamacpp-trace.jsonl"
    report = REPO / "benchmarks/results/llamacpp-trace.md"
    data.write_text("\n".join(data_lines) + "\n")
    report.write_text("\n".join(md) + "\n")
    return [data, report]


if __name__ == "__main__":
    import sys

    if sys.argv[1] in DATA_FILES:
        print(write_data(Path(sys.argv[2]), sys.argv[1]))
    else:
        for path in write(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else None):
            print(path)
