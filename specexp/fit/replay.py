"""A measured job replayed on the simulator: its record's overrides with the engine swapped for
`runtime=sim runtime.engine=<profile>`, plus what the simulator must be told of the job that the
overrides do not say (specexp.fit.records holds the simulated jobs against the measured).

- a drafter's acceptance by position, and how often and how far it drafted, from the engine's own
  counters over the job (`acceptance`, `draft_shape`): the simulator is then judged on the engine's
  costs, not on a guess of what the drafter accepts;
- a cache-reuse job's new suffix as the server's tokenizer counted it (`byte_suffix_tokens`);
- its prompts' lengths as the server counted them, where its chat template added tokens to the
  target (`served_prompt_lengths`), and a session's turns so (`served_session_lengths`);
- the largest CUDA graph the server was given (`cuda_graph_max_tokens`);
- the deletion of the runtime keys a study sets for its server that the simulator has not.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from specexp.record import Measurement, RunRecord
from specexp.spec.arms import draft_length

ENGINE_OVERRIDES = (
    "runtime=",
    "runtime.load_format=",
    "runtime.executable=",
    "runtime.extra_args=",
    "runtime.start_timeout_s=",
    "runtime.engine",  # `~runtime.engine`: a sitting drops an experiment's simulator setting
    "runtime.env=",  # the server's environment: the simulator imitates the engine's defaults
)
"""Overrides of a measured job that name the engine, not the cell (with `+` or `~`): replaced by the
simulator's."""
BYTE_CHAT_TAIL_TOKENS = 13
"""Tokens of the ChatML tail after a user message under specexp's byte-level tokenizer
(`<|im_end|>`, a newline, `<|im_start|>`, then `assistant` and a newline byte by byte)."""
MARKER_TOKENS = 14
"""The unique marker before a cache group's instruction, byte by byte: 12 hex digits, `]` and a space
(specexp.workloads.prompts.PromptBuilder: `{material}\\n\\n[{marker}] {instruction}`)."""


def acceptance(record: RunRecord) -> list[float] | None:
    """The job's acceptance by position: each position's median over the job's measurements."""
    rows = [
        m.metrics.acceptance_by_position
        for m in record.measurements
        if m.metrics.acceptance_by_position
    ]
    if not rows:
        return None
    width = min(len(r) for r in rows)
    return [round(statistics.median(r[i] for r in rows), 4) for i in range(width)]


def draft_shape(record: RunRecord) -> tuple[float | None, float | None]:
    """(draft_rate, draft_continue) of the job, from the engine's own counts over its measurements:
    drafts per decode step (a step emits its accepted drafts and one token of its own; a request's
    first token comes from its prompt), and the chance a draft goes on past each position that gives
    its mean length (draft tokens per draft). None where the engine counted neither, or for a figure
    that is 1 (every step drafts; every draft is k long)."""
    c = record.conditions
    k = draft_length(c.drafter, c.k)
    drafts = tokens = accepted = steps = 0.0
    for m in record.measurements:
        e, timings = m.engine_counters, _step_timings(m)
        if not e or not e.drafts or not timings:
            continue
        emitted = sum(float(t.get("predicted_n") or 0) for t in timings)
        drafts, tokens, accepted = (
            drafts + e.drafts,
            tokens + (e.draft_tokens or 0),
            accepted + (e.accepted or 0),
        )
        steps += emitted - len(timings) - (e.accepted or 0)
    if not k:
        return None, None
    if not drafts:  # counted, with timings, and no draft: the server drafted nothing over the job
        counted = any(
            m.engine_counters is not None and _step_timings(m) for m in record.measurements
        )
        return (0.0 if counted else None), None
    rate = min(drafts / steps, 1.0) if steps > 0 else None
    mean = tokens / drafts
    go_on = None
    if mean < k - 1e-6:  # sum of go_on**i, i < k, is the mean length: bisection
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if sum(mid**i for i in range(k)) < mean else (lo, mid)
        go_on = round(lo, 4)
    return (round(rate, 4) if rate is not None and rate < 0.9999 else None), go_on


def _step_timings(m: Measurement) -> list[dict]:
    """The per-request timings that count the tokens a request emitted (llama-server's `predicted_n`),
    from which steps are counted; vLLM's per-request metrics count none, so a vLLM job's draft rate
    stays unknown (None), not 0."""
    return [t for t in m.engine_timings or [] if isinstance(t.get("predicted_n"), (int, float))]


def byte_suffix_tokens(record: RunRecord) -> int | None:
    """A cache-reuse job's new suffix in tokens where its server counted bytes (the byte-level tokenizer of
    the config-only folders specexp writes, runtime.load_format=dummy): the marker, the instruction and,
    for chat, the template's tail. None for any other job."""
    config = record.provenance.composed
    workload = config.workload
    runtime = config.runtime
    if (
        workload is None
        or not workload.shared_prefix
        or runtime is None
        or runtime.load_format != "dummy"
    ):
        return None
    tail = BYTE_CHAT_TAIL_TOKENS if (workload.endpoint or "chat") == "chat" else 0
    return MARKER_TOKENS + len((workload.prompt or "").encode()) + tail


def sim_overrides(record: RunRecord, engine: str) -> list[str]:
    """The measured job's overrides with the simulator imitating `engine` in place of the server."""
    kept = [
        o for o in record.provenance.overrides if not o.lstrip("+~").startswith(ENGINE_OVERRIDES)
    ]
    out = ["runtime=sim", f"runtime.engine={engine}", *kept, *_engine_only_keys(kept)]
    served = served_prompt_lengths(record)
    if served is not None and _fills_to_length(out):
        out = [o for o in out if not o.startswith(PROMPT_OVERRIDES)] + [served]
    turns = served_session_lengths(record)
    if turns:
        out = [o for o in out if not o.startswith((*PROMPT_OVERRIDES, TURN_OVERRIDE))] + turns
    accepted = acceptance(record)
    workload = record.provenance.composed.workload
    workload_class = (workload.acceptance_class if workload else None) or "fresh"
    if accepted:
        out.append(f"drafter.acceptance.{workload_class}=[{','.join(str(a) for a in accepted)}]")
    rate, go_on = draft_shape(record)
    if rate is not None:
        out.append(f"++drafter.draft_rate={{{workload_class}:{rate}}}")
    if go_on is not None:
        out.append(f"++drafter.draft_continue={{{workload_class}:{go_on}}}")
    suffix = byte_suffix_tokens(record)
    if suffix is not None:
        out.append(f"workload.suffix_tokens={suffix}")
    graphs = cuda_graph_max_tokens(record)
    if graphs is not None:
        out.append(f"runtime.cuda_graph_max_tokens={graphs}")
    return out


PROMPT_OVERRIDES = ("workload.prompt_tokens=", "workload.prompt_lengths=")


def served_prompt_lengths(record: RunRecord) -> str | None:
    """The override that gives the simulator the job's prompts at the lengths its server counted: each
    target (`workload.prompt_tokens`, or each of `workload.prompt_lengths`) plus the median of what the
    server added to it over the job's measurements. A simulated prompt is its target exactly, so a
    512-token target that a server counted as 532 (specexp before it fitted prompts to the server's
    count) would stay under a 512-token CUDA graph that the real step ran past, and a 32-token target
    whose instruction came to 130 tokens would be prefilled as 32. None where the server added nothing,
    and for prompts that share a prefix (their suffix is `byte_suffix_tokens`'s), sessions, traces and
    datasets; sim_overrides also leaves it out where the workload sends its instruction alone, which
    the simulator sends at its own length."""
    workload = record.provenance.composed.workload
    if (
        workload is None
        or workload.shared_prefix
        or workload.session is not None
        or workload.trace_file
        or workload.dataset_file
    ):
        return None
    targets = workload.prompt_lengths or (
        [workload.prompt_tokens] if workload.prompt_tokens else []
    )
    counted = [m.conditions.prompt_tokens for m in record.measurements]
    added = [
        n - min(targets, key=lambda t: abs(t - n)) for n in counted if n is not None and targets
    ]
    if not added:
        return None
    extra = round(statistics.median(added))
    if extra <= 0:
        return None
    if workload.prompt_lengths:
        return f"workload.prompt_lengths=[{','.join(str(t + extra) for t in targets)}]"
    return f"workload.prompt_tokens={targets[0] + extra}"


TURN_OVERRIDE = "workload.session.turn_tokens="


def served_session_lengths(record: RunRecord) -> list[str]:
    """The overrides that give the simulator a session's turns at the lengths its server counted: the
    first turn's prompt, and each later turn's growth less the tokens the model wrote (the new message
    as the server's tokenizer counted it: 288 tokens for a 64-token target on SGLang's config-only
    folders). The simulator grows a session by `session.turn_tokens` plus the tokens written, so a
    first turn of 8,064 tokens stayed inside one 8,192-token prefill step where the server's 8,368 took
    two. Empty where the workload is no session, or its turns' counts are unknown or as targeted."""
    workload = record.provenance.composed.workload
    session = workload.session if workload is not None else None
    counted: dict[int, list[int]] = {}
    for m in record.measurements:
        turn, n = getattr(m.conditions, "turn", None), m.conditions.prompt_tokens
        if turn is not None and n is not None:
            counted.setdefault(int(turn), []).append(int(n))
    if session is None or workload is None or 1 not in counted or len(counted) < 2:
        return []
    first = statistics.median(counted[1])
    by_turn = sorted((t, statistics.median(ns)) for t, ns in counted.items())
    growth = [b - a for (t, a), (u, b) in zip(by_turn, by_turn[1:], strict=False) if u == t + 1]
    if not growth:
        return []
    # the composed node keeps every key it was given, output_tokens among them
    written = getattr(workload, "output_tokens", None)
    if not isinstance(written, int):
        return []
    message = round(statistics.median(growth)) - written
    prompt = round(first) - message
    if message < 1 or prompt < 1:
        return []
    return [f"workload.prompt_tokens={prompt}", f"{TURN_OVERRIDE}{message}"]


def _fills_to_length(overrides: Sequence[str]) -> bool:
    """Whether the job's workload, composed as it is now, fills its prompts to their lengths (not an
    instruction alone: `workload.material: none`, which a record from before the key cannot say)."""
    from specexp.run.compose import build_spec

    return build_spec(list(overrides)).workload.material != "none"


GRAPH_FLAG = "--compilation-config.max_cudagraph_capture_size"


def cuda_graph_max_tokens(record: RunRecord) -> int | None:
    """The largest CUDA graph a measured vLLM server was given (`GRAPH_FLAG N` or `GRAPH_FLAG=N` in
    its extra_args); None: its default."""
    runtime = record.provenance.composed.runtime
    args = [str(a) for a in (runtime.extra_args if runtime else None) or []]
    for i, arg in enumerate(args):
        value = (
            arg.split("=", 1)[1]
            if arg.startswith(GRAPH_FLAG + "=")
            else args[i + 1]
            if arg == GRAPH_FLAG and i + 1 < len(args)
            else None
        )
        if value is not None and value.isdigit():
            return int(value)
    return None


def _engine_only_keys(overrides: Sequence[str]) -> list[str]:
    """Deletions (`~runtime.KEY`) of the runtime keys an experiment file sets that the simulator has
    not (a study's `runtime.extra_args` for its server): the study's cells, on the simulator."""
    from omegaconf import DictConfig, OmegaConf

    from specexp.spec.paths import experiments_dir
    from specexp.spec.runtime import SimRuntimeSpec

    out = []
    for o in overrides:
        if o.lstrip("+").startswith("experiment="):
            path = experiments_dir() / f"{o.split('=', 1)[1]}.yaml"
            loaded = OmegaConf.load(path)
            runtime = (loaded.get("runtime") if isinstance(loaded, DictConfig) else None) or {}
            out += [f"~runtime.{key}" for key in runtime if key not in SimRuntimeSpec.model_fields]
    return out
