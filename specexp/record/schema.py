"""The run record as a type: what `result.json` holds, version `specexp.result/2`.

Written from these models and read back into them; a record of another version is refused
with a one-line message naming the file. Conditions and metrics are classes written from their one
definition each (`specexp.spec.vocabulary`, by `scripts/record-fields` into `specexp.record.fields`), so a
record can hold no condition or metric that the vocabulary does not define, and a type checker sees
every field.
"""

from __future__ import annotations

from typing import Any, Final, Literal, NamedTuple

from pydantic import ConfigDict, Field

from specexp.record.composed import ComposedConfig, SloNode, WorkloadNode, composed
from specexp.record.fields import Conditions, Metrics
from specexp.record.named import Record

SCHEMA: Final = "specexp.result/2"
SCHEMA_VERSION: Final = 2
Status = Literal["ok", "failed", "refused", "skipped"]


class ErrorInfo(Record):
    kind: str
    """Why: see docs/records.md for the kinds."""
    message: str
    log_tail: str = ""
    """The last lines of the server's log."""


class EngineFacts(Record):
    """What the engine said about itself when it started (or was reached). The facts every engine
    may report are typed fields; an engine's own further facts (vLLM's cache blocks and paths,
    the simulator's memory plan) are kept beside them as it reported them."""

    model_config = ConfigDict(extra="allow", frozen=True)

    version: str | None = None
    kv_cache_tokens: int | None = None
    """KV-cache capacity in tokens, as the engine reported it at start."""
    reused_server: bool | None = None
    """The job ran on a server an earlier job of the sweep started."""
    max_model_len: int | None = None
    cache_block_tokens: int | None = None
    total_slots: int | None = None
    """llama.cpp: the server's parallel slots."""
    engine_profile: str | None = None
    """The simulator: the engine profile it imitated (conf/sim_engine/)."""
    engine_calibration: str | None = None
    """The simulator: what that profile's figures rest on for this device, or "uncalibrated"."""


class ConfigOption(NamedTuple):
    """One config group's option as the job composed it: its name and what describes it."""

    name: str | None
    description: str | None
    hf_id: str | None


class PromptSource(NamedTuple):
    """Where a job's prompts came from (its workload as composed)."""

    workload: str | None
    material: str | None
    """none, source_file or filler: what fills a prompt to its length."""
    dataset_file: str | None
    turn_material: str | None
    """Agentic sessions: what each turn's new message is made of."""


class Provenance(Record):
    specexp_version: str | None = None
    git_sha: str | None = None
    python: str | None = None
    host: str | None = None
    visible_gpus: str | None = None
    """CUDA_VISIBLE_DEVICES as the job saw it: the GPUs a scheduler (Ray, SLURM) gave it; null
    where none was set."""
    started_at: str | None = None
    finished_at: str | None = None
    overrides: list[str] = []
    config: dict[str, Any] = {}
    """The resolved configuration of the job (never an API key: only the variable's name)."""
    server_argv: list[str] | None = None
    engine_info: EngineFacts | None = None
    """What the engine said about itself: version, KV capacity, reuse of the server, its own facts."""

    @property
    def composed(self) -> ComposedConfig:
        """`config` read through its typed model (specexp.record.composed)."""
        return composed(self.config)

    def option(self, group: str) -> ConfigOption:
        """The option of config `group` (hardware, model, quantization...) the job composed."""
        node = self.composed.option(group)
        return ConfigOption(node.name, node.description, node.hf_id)

    def prompt_source(self) -> PromptSource:
        w = self.composed.workload or WorkloadNode()
        return PromptSource(
            w.name, w.material, w.dataset_file, w.session.turn_material if w.session else None
        )

    @property
    def slo(self) -> SloNode | None:
        """The service-level objectives the job was judged against (`slo.*`), if any was set."""
        slo = self.composed.slo
        return slo if slo is not None and slo.active else None


class CounterDeltas(Record):
    """The engine's own speculative counters over a measurement's timed windows (each window's
    after minus before, summed): what acceptance_rate, acceptance_by_position and tokens_per_pass
    are computed from, kept so they can be recomputed and held against the engine's per-request
    counts (llama-server's `timings.draft_n` / `draft_n_accepted`)."""

    drafts: float | None
    """Draft rounds (llama.cpp spec_decode_num_drafts_total, vLLM num_drafts)."""
    draft_tokens: float | None
    """Tokens proposed."""
    accepted: float | None
    """Tokens accepted."""
    accepted_per_position: list[float | None] | None
    """Tokens accepted at each draft position (1-based position i at index i - 1)."""


class ClientLoad(Record):
    """What the measuring client spent on a measurement, and whether it, not the server, set the pace."""

    processes: int
    """Client processes the windows were spread over."""
    cpu_s: float
    """Client CPU seconds over the windows."""
    busy: float
    """The busiest window's client CPU share (CPU seconds / wall seconds / processes)."""
    send_lag_p99_s: float | None
    """p99 of the lag between a request's scheduled and actual send."""
    send_lag_max_s: float
    bound: bool
    """The client was the bottleneck (busy at 0.8 or more, a request sent 10 ms late or more, or a
    stream's end read in bulk): the figures say more about the client than about the server."""
    bulk_reads: int = 0
    """Requests whose stream the client read in bulk at an end (specexp.measure.reads.read_resolved):
    their decode figures are left out of the point's."""


class SampledOutput(Record):
    """One sampled completion of the sampled-output check: the facts its verdict is judged from."""

    prompt: str
    """Which of the workload's sample prompts (p0, p1, ...): the test's stratum."""
    seed: int
    """The seed the request was sent with."""
    tokens: list[str]
    """Its first tokens, as the server's tokenizer reads the completion (ids), else its words."""


class TaskItem(Record):
    """One scored item of a task run through lm-evaluation-harness."""

    score: float
    """1 right, 0 wrong (partial credit between)."""
    target: str | None = None
    response: str | None = None
    """The model's answer as lm-eval filtered it (cut to 200 characters)."""


class EngineSeries(Record):
    """What the engine said about itself while one timed window ran, read at a fixed interval
    (`workload.engine_series_interval_s`; specexp.measure.engine_series), beside its requests, on
    one clock: seconds since the window began. A column per figure, a value per reading; null
    where the engine exports no such figure or a reading got no answer. The counters are the
    engine's running totals (a reading minus the one before: what happened between them)."""

    interval_s: float
    """The interval readings were asked for at (a long window's readings thinned to at most
    engine_series.MAX_READINGS keep it: every n-th, the last always)."""
    clock: Literal["wall", "simulated"] = "wall"
    t: list[float]
    """Seconds since the window began, each reading's."""
    running: list[float | None]
    """Requests the engine is running (llama.cpp requests_processing, vLLM num_requests_running,
    SGLang num_running_reqs)."""
    waiting: list[float | None]
    """Requests queued, not yet running (requests_deferred, num_requests_waiting, num_queue_reqs)."""
    kv_usage: list[float | None]
    """Share of the KV cache in use, 0-1 (vLLM kv_cache_usage_perc, SGLang token_usage; llama.cpp
    exports none)."""
    drafts: list[float | None]
    draft_tokens: list[float | None]
    accepted: list[float | None]
    cached_prompt_tokens: list[float | None]
    generation_tokens: list[float | None]
    requests: list[list[float | None]]
    """Per request of the window: [sent, first token, last token], seconds since the window began."""
    read_s: float | None = None
    """Mean seconds one reading took (the sampling's cost, spent on the engine's side and the
    client's); null: none answered."""
    failed: int = 0
    """Readings that got no answer (counted in no column)."""


class Measurement(Record):
    conditions: Conditions
    metrics: Metrics
    token_source: Literal["server", "client"] = "server"
    samples: dict[str, list[Any]] = {}
    """Per repeat, every metric behind a median (null where a repeat had none)."""
    spread: dict[str, list[float]] = {}
    """[min, max] of each metric's samples."""
    server_start: list[int] | None = None
    """Per repeat (in the order of `samples`), the server start it ran on (0-based;
    `workload.server_starts`); None: every repeat ran on one server."""
    requests: list[str] = []
    completions: dict[str, str] = {}
    """A digest of each completion's text by request id: the fact output identity is judged from."""
    errors: list[str] = []
    engine_timings: list[dict[str, Any]] | None = None
    engine_counters: CounterDeltas | None = None
    """The speculative counter deltas the acceptance metrics were computed from; None where the
    engine exposes none or nothing drafted."""
    prefix_cache_reset: bool | None = None
    partial: bool = False
    """The job did not finish; the windows it completed are kept."""
    client: ClientLoad | None = None
    """What the measuring client spent (None where the runtime has no client, the simulator)."""
    telemetry: list[dict[str, Any]] | None = None
    """Per window, the GPU's power, energy, memory, utilisation and clocks (specexp.measure.telemetry), or
    why there are none (`{"source": null, "reason": ...}`); None: not sampled."""
    engine_series: list[EngineSeries | None] | None = None
    """Per window, the engine's state read at a fixed interval while it ran (running and waiting
    requests, KV-cache use, the speculative and prefix-cache counters) and its requests' times;
    None: not sampled (`workload.engine_series_interval_s: null`, or an engine without metrics)."""
    step_costs: dict[str, dict[str, float]] | None = None
    """The simulator: what the engine's time went to over the timed windows, seconds by phase
    (`decode`: steps that only decode or verify; `prefill`: steps that took a prompt chunk) and cost
    (weights_read, matmul_compute, kv_read, attention_compute, drafter, fixed; specexp.sim.costs),
    the largest named as the figure's "why" in the report; None: a real engine (it cannot say)."""
    load_delivered: bool | None = None
    """Open-loop: the achieved rate came within measure.RATE_MARGIN (10 %) of the scheduled one in every
    repeat; false: the client or a max_concurrency cap could not deliver the load; null: closed-loop."""
    slo_met: bool | None = None
    """With an SLO set: at least slo.percentile % of the point's requests met every objective."""
    contaminated: bool | None = None
    """The engine's log says it compiled a kernel during one of the point's timed windows (after the
    window was run again, `workload.rerun_contaminated`): its figures include the compile. False: the
    log was read over every window and says nothing of the kind; None: the engine's log cannot say
    (an engine that reports no such compiles, a server specexp did not start, the simulator)."""
    contamination: list[str] = []
    """The log lines behind `contaminated`, as the engine wrote them (at most 8 a window, cut to 300
    characters)."""
    compiles_read: list[str] = []
    """What specexp read over every timed window of the point to know whether it compiled: "log" (the
    engine's log), "kernel_cache" (the Triton cache of a server specexp started); empty where nothing
    was (then `contaminated` is null)."""
    sampled: dict[str, SampledOutput] = {}
    """A sampling workload (`workload.samples`): each completion's prompt, seed and first tokens, by
    request id."""
    task_items: dict[str, TaskItem] = {}
    """workload=task_scores: each item's score by `task/doc_id`."""
    task: dict[str, Any] | None = None
    """workload=task_scores: what lm-eval ran (its version, task, argv without secrets, scores)."""
    counters_went_back: list[str] = []
    """The engine counters that were lower after a timed window than before it (an engine restart):
    those windows' deltas are unknown and count in no acceptance figure."""
    tokens_beyond_stream: dict[str, int] = {}
    """By request id, the tokens the server's usage counted beyond what the client was streamed
    (more than its token ids, or than its text has bytes plus a few silent tokens): a server whose
    count cannot be true, and so neither can the rates computed from it."""


class RunRecord(Record):
    """One job's `result.json`."""

    schema_: Literal["specexp.result/2"] = Field(SCHEMA, alias="schema")
    schema_version: Literal[2] = SCHEMA_VERSION
    run_id: str
    status: Status
    error: ErrorInfo | None = None
    conditions: Conditions
    """The conditions fixed for the whole job; measurement-level ones are null here."""
    provenance: Provenance
    measurements: list[Measurement] = []
    notes: list[str] = []
    """What the runtime could not read (an unreachable /metrics), when anything."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @property
    def experiment(self) -> str | None:
        """The experiment file the job came from, if any."""
        return self.provenance.composed.experiment or None

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2) + "\n"
