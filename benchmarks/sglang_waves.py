"""How SGLang's front end hands a burst to its scheduler, and when the scheduler forms each wave.

    .venv/bin/python benchmarks/sglang_waves.py

Every SGLang sitting's dense-shape `concurrency` windows of 8 to 32 streams whose requests carry
SGLang's own timestamps (`meta_info`: `request_received_ts`, `api_server_dispatch_finish_ts` when the
tokenizer manager handed the request to the scheduler, `response_sent_to_client_ts` when its first
response left; specexp keeps them as each request's engine timings). For each window:

- the hand-offs: the first request's, the gap to the second, and the spacing of the rest (one at a
  time through the front end's event loop);
- the waves: requests whose first responses left within WAVE_GAP_MS of each other were prefilled in
  one batch. SGLang prefills a batch alone (docs/engines.md 2.8), so the second wave is what had reached
  the scheduler when it formed its second batch: between the last hand-off of the second wave and the
  first of the third, after the first request's, where a third wave shows it. The profile takes that
  interval as `prefill_launch_ms` (conf/sim_engine/sglang.yaml, specexp/sim/launches.py): an effective
  figure, since with nothing else handed over the scheduler forms its second batch once the first
  prefill has ended (docs/engines.md 2.9).

A last table sets, for the H100 sittings of HOLD_FROM (bursts of 1-8: SGLang's overlap of consecutive
prefill batches on and off, EAGLE-3 at each k), the first request's first token beside its burst's
last: whether it waited for the next batch's launch. Jobs whose server ran with an environment of its
own (`runtime.env`) are left out of the rest. Writes benchmarks/results/sglang_waves.md.
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

from omegaconf import OmegaConf

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from benchmarks.gpu.sglang_report import sitting_dirs  # noqa: E402
from specexp.record import RunRecord, find_records  # noqa: E402

WAVE_GAP_MS = 4.0
"""First responses this close left from one prefill batch (a batch's own are within 2 ms)."""
WINDOW_GAP_S = 0.3
"""Requests received this far apart belong to different windows (a window's burst arrives in 50 ms)."""
STREAMS = (8, 16, 32)
BATCH_TOKENS = 8192
"""The prompt tokens one prefill batch takes: SGLang's chunked_prefill_size, 8,192 on a card of 80-160 GB
(sglang server_args.py; the H200's /server_info, tests/fixtures/engines/sglang/h200-0.5.12/server_info.json)."""
HOLD_FROM = ("h100-sglang-2026-12-06c", "h100-sglang-2026-12-06d", "h100-sglang-2026-12-06e")
"""The H100 sittings of benchmarks/gpu/sglang_h200.py --plan hold (EAGLE-3 at k = 7 with SGLang's overlap
of consecutive prefill batches on and off), --plan hold-k (k = 1 and 3) and --plan k-sweep (k = 1, 3
and 7 on one machine), each in bursts of 1-8 on a host of its own."""
NO_OVERLAP = "SGLANG_DISABLE_CONSECUTIVE_PREFILL_OVERLAP"
EAGER_FROM = ("h200-sglang-2026-12-05b",)
"""The sitting whose EAGLE-3 jobs set the profile's figures (benchmarks/sglang_calibration.py SET_FROM)."""
LAYERS = int(OmegaConf.load(REPO / "conf/model/qwen3-8b.yaml").num_hidden_layers)
"""The dense Qwen3-8B shape's decoder layers."""
RECEIVED, HANDED, SENT = (
    "request_received_ts",
    "api_server_dispatch_finish_ts",
    "response_sent_to_client_ts",
)


def bursts(timings: list[dict]) -> list[list[dict]]:
    """A point's requests (each with SGLang's three timestamps), one list a window, in arrival order."""
    rows = sorted(
        (t for t in timings if all(isinstance(t.get(k), float) for k in (RECEIVED, HANDED, SENT))),
        key=lambda t: t[RECEIVED],
    )
    found: list[list[dict]] = []
    for t in rows:
        if found and t[RECEIVED] - found[-1][-1][RECEIVED] <= WINDOW_GAP_S:
            found[-1].append(t)
        else:
            found.append([t])
    return found


def waves(burst: list[dict]) -> list[list[dict]]:
    """The burst's requests grouped by the prefill batch that gave their first token."""
    grouped: list[list[dict]] = []
    for t in sorted(burst, key=lambda t: t[SENT]):
        if grouped and (t[SENT] - grouped[-1][-1][SENT]) * 1e3 <= WAVE_GAP_MS:
            grouped[-1].append(t)
        else:
            grouped.append([t])
    return grouped


def formed_within(burst: list[dict]) -> tuple[float, float] | None:
    """When, after the first request's hand-off, the scheduler formed its second batch, ms: (no
    earlier than, no later than); None where no third wave bounds it, or the waves' hand-offs
    interleave (a request handed over later but served earlier)."""
    grouped = waves(burst)
    if len(grouped) < 3 or len(grouped[0]) != 1:
        return None
    if sum(t["prompt_tokens"] for t in grouped[1]) + grouped[2][0]["prompt_tokens"] > BATCH_TOKENS:
        return None  # the third wave's first request did not fit the second batch
    first = grouped[0][0][HANDED]
    last_in = max(t[HANDED] for t in grouped[1])
    first_out = min(t[HANDED] for g in grouped[2:] for t in g)
    if first_out <= last_in:
        return None
    return (last_in - first) * 1e3, (first_out - first) * 1e3


def spacing(burst: list[dict]) -> tuple[float, float]:
    """(The gap from the first hand-off to the second, the mean spacing of the rest), ms."""
    handed = sorted(t[HANDED] for t in burst)
    return (handed[1] - handed[0]) * 1e3, (handed[-1] - handed[1]) / (len(handed) - 2) * 1e3


Key = tuple[str, str, str, int, int, int]
"""(sitting, card, drafter, k, streams, prompt tokens)."""


def bursts_jobs() -> list[tuple[Path, RunRecord]]:
    """Every sitting's dense-shape `concurrency` jobs, with their sitting's folder."""
    return [
        (sitting, record)
        for sitting in sitting_dirs()
        for _, record in find_records([sitting / "sweeps" / "h200_sglang_dense"])
        if str(record.conditions.workload or "").startswith("concurrency")
    ]


def server_env(record: RunRecord) -> dict[str, str]:
    """The environment the job's server was started with besides specexp's (`runtime.env`)."""
    return dict(record.provenance.config.get("runtime", {}).get("env") or {})


def hold_table() -> list[str]:
    """The first request's first token of every burst of HOLD_FROM's jobs, a row for each sitting,
    drafter, k and streams, with SGLang's overlap of consecutive prefill batches on (its default) and
    off."""
    lines = [
        "| sitting | card | drafter | k | consecutive prefill overlap | streams | windows | the first "
        "request's first token, ms (median; range) | the burst's last first token, ms (median) |",
        "|---|---|---|---:|---|---:|---:|---|---:|",
    ]
    for sitting, record in bursts_jobs():
        if sitting.name not in HOLD_FROM:
            continue
        overlap = "off" if server_env(record).get(NO_OVERLAP) == "1" else "on"
        for m in record.measurements:
            c = m.conditions
            found = [b for b in bursts(m.engine_timings or []) if len(b) == c.concurrency]
            if not found:
                continue
            firsts = [(min(t[SENT] for t in b) - min(t[RECEIVED] for t in b)) * 1e3 for b in found]
            lasts = [(max(t[SENT] for t in b) - min(t[RECEIVED] for t in b)) * 1e3 for b in found]
            lines.append(
                f"| {sitting.name} | {c.hardware} | {c.drafter} | {c.k or '–'} | {overlap} "
                f"| {c.concurrency} | {len(found)} | {statistics.median(firsts):.0f} ({min(firsts):.0f}-{max(firsts):.0f}) | "
                f"{statistics.median(lasts):.0f} |"
            )
    return lines


def collect() -> tuple[dict, dict, dict, dict]:
    """By Key: each window's gap to the second hand-off and spacing after it (ms), the bounds of its
    second batch's forming, and its waves' sizes."""
    gaps: dict[Key, list[float]] = defaultdict(list)
    spacings: dict[Key, list[float]] = defaultdict(list)
    bounds: dict[Key, list[tuple[float, float]]] = defaultdict(list)
    shapes: dict[Key, list[str]] = defaultdict(list)
    for sitting, record in bursts_jobs():
        if server_env(record):
            continue  # SGLang's scheduling changed by its environment: hold_table's
        for m in record.measurements:
            c = m.conditions
            if c.concurrency not in STREAMS or not m.engine_timings:
                continue
            key = (
                sitting.name,
                c.hardware,
                c.drafter,
                c.k or 0,
                c.concurrency,
                c.prompt_tokens,
            )
            for burst in bursts(m.engine_timings):
                if len(burst) != c.concurrency:
                    continue
                gap, rest = spacing(burst)
                gaps[key].append(gap)
                spacings[key].append(rest)
                shapes[key].append("/".join(str(len(g)) for g in waves(burst)))
                if (b := formed_within(burst)) is not None:
                    bounds[key].append(b)
    return gaps, spacings, bounds, shapes


def midpoints(
    bounds: dict[Key, list[tuple[float, float]]], drafter: str, sittings: tuple[str, ...] = ()
) -> list[float]:
    """The midpoints of the second batch's forming on the H200, with `drafter`, in `sittings` (all)."""
    return [
        (lo + hi) / 2
        for key, found in bounds.items()
        if key[1] == "h200" and key[2] == drafter and (not sittings or key[0] in sittings)
        for lo, hi in found
    ]


def main() -> None:
    gaps, spacings, bounds, shapes = collect()
    rows: dict[tuple, list[Key]] = defaultdict(list)
    for key in gaps:
        rows[key[1:]].append(key)
    lines = [
        "# How SGLang hands a burst to its scheduler, and when it forms each wave",
        "",
        "Written by `benchmarks/sglang_waves.py` from every SGLang sitting's dense-shape `concurrency` windows "
        "of 8 to 32 streams (SGLang 0.5.12 with CUDA, the Qwen3-8B shape in BF16 served without weights; "
        "benchmarks/gpu/sglang_report.py SITTINGS) whose requests carry SGLang's timestamps. Hand-offs are "
        "`api_server_dispatch_finish_ts` (the tokenizer manager handing the request to the scheduler); a "
        "wave is the requests whose first responses left together (`response_sent_to_client_ts` within "
        f"{WAVE_GAP_MS:.0f} ms). *Second batch formed* is the interval, after the first request's hand-off, "
        "in which the scheduler formed its second prefill batch: after the last hand-off of the second wave, "
        "before the first of the third (windows with three waves or more, where the third wave's first "
        f"request would have fitted the second batch's {BATCH_TOKENS:,} tokens).",
        "",
        "| card | drafter | k | streams | prompt | windows | waves (most seen) | first to second hand-off, "
        "ms (median) | then one every, ms (median) | second batch formed, ms (medians of the bounds; "
        "windows) |",
        "|---|---|---:|---:|---:|---:|---|---:|---:|---|",
    ]
    for row in sorted(rows):
        card, drafter, k, streams, prompt = row
        keys = rows[row]
        gap = [g for key in keys for g in gaps[key]]
        rest = [r for key in keys for r in spacings[key]]
        seen = [w for key in keys for w in shapes[key]]
        b = [x for key in keys for x in bounds.get(key, [])]
        formed = (
            f"{statistics.median(lo for lo, _ in b):.1f}-{statistics.median(hi for _, hi in b):.1f} "
            f"({len(b)})"
            if b
            else "–"
        )
        lines.append(
            f"| {card} | {drafter} | {k or '–'} | {streams} | {prompt} | {len(gap)} | "
            f"{', '.join(sorted(set(seen), key=lambda w: (-seen.count(w), w))[:4])} | "
            f"{statistics.median(gap):.1f} | {statistics.median(rest):.2f} | {formed} |"
        )
    graphed = midpoints(bounds, "none")
    eager = midpoints(bounds, "eagle3", EAGER_FROM)
    spread = [
        (rest * (key[4] - 2) + gap) / (key[4] - 1)
        for key in gaps
        if key[1] == "h200" and key[2] == "none"
        for gap, rest in zip(gaps[key], spacings[key], strict=True)
    ]
    graphed_ms, eager_ms = statistics.median(graphed), statistics.median(eager)
    lines += [
        "",
        "The `sglang` profile's figures (conf/sim_engine/sglang.yaml), from the windows of the jobs it is "
        "fitted to or takes figures from (benchmarks/sglang_calibration.py; the draft model's, the other "
        "EAGLE-3 sittings' and the H100's are held out):",
        "",
        f"- `prefill_launch_ms` {graphed_ms:.1f}: without a drafter on the H200 (SGLang prefills from its "
        f"piecewise graphs), the second batch was formed {graphed_ms:.1f} ms after the first hand-off (the "
        f"median of the intervals' midpoints, {len(graphed)} windows);",
        f"- `request_serial_ms` {statistics.median(spread):.2f}: a whole burst's hand-offs came one every "
        f"{statistics.median(spread):.2f} ms (the median over the same job's windows of the first to the "
        f"last hand-off, over the streams less one; {len(spread)} windows);",
        f"- not `ungraphed_prefill_layer_us`: with EAGLE-3 ({', '.join(EAGER_FROM)}) the prefill runs "
        f"kernel by kernel (docs/engines.md 2.6), and the second batch was formed {eager_ms:.1f} ms after the "
        f"first hand-off ({len(eager)} windows), {eager_ms - graphed_ms:.1f} ms later "
        f"({(eager_ms - graphed_ms) / LAYERS * 1e3:.0f} us for each of the shape's {LAYERS} layers). The "
        "same sitting's warm hits took 17.3 ms more with EAGLE-3 than without, which the profile takes "
        "(480 us a layer); what else a warm hit with EAGLE-3 waits on is not known (docs/engines.md 2.9).",
    ]
    lines += [
        "",
        "## What holds the first request's first token",
        "",
        "SGLang's overlap scheduler processes a batch's results only after it has launched the next batch "
        f"(docs/engines.md 2.9); `{NO_OVERLAP}=1` processes them first where two prefill batches follow each "
        "other. From the first request's arrival (`request_received_ts`) to its first response "
        f"(`response_sent_to_client_ts`), in the H100 sittings of `--plan hold`, `hold-k` and `k-sweep` ({', '.join(HOLD_FROM)}), each on a "
        "host of its own:",
        "",
        *hold_table(),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    (REPO / "benchmarks/results/sglang_waves.md").write_text(text)


if __name__ == "__main__":
    main()
