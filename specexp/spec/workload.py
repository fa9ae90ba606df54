"""The workload's and the SLO's specs: what is asked of a server, and what it must meet.

Part of the typed, frozen specs of `specexp.spec.experiment` (which re-exports them); only
`specexp.run.compose` builds them from Hydra's config.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from specexp.spec.model_base import _listed, _Spec


class SessionSpec(_Spec):
    """An agentic session (workload=agentic_sessions): turns that each resend the conversation."""

    turns: int = Field(default=4, ge=1)
    """Turns of each session; turn t sends the whole conversation so far plus one new message."""
    think_time_s: float = Field(default=2.0, ge=0)
    """Pause between a turn's replies and the next turn (virtual on the simulator's clock)."""
    turn_tokens: int = Field(default=256, ge=1)
    """Tokens of each turn's new message (a tool result or a user message)."""
    turn_material: Literal["source_file", "prose", "filler"] = "source_file"
    """What the new messages carry: slices of the generated source file (tool results of a code
    agent) or unique prose."""


UNSAFE_CODE_TASKS = ("specexp_code", "humaneval", "mbpp", "cruxeval", "longproc")
"""Tasks that run the model's code (lm-eval 0.4.13's `unsafe_code: true`, and specexp's own
`specexp_code`), by name or name prefix: composing one without the opt-in is refused."""


def runs_model_code(name: str) -> bool:
    """Whether one of the tasks (lm-eval's comma-separated list) runs the model's code."""
    return any(t.strip().startswith(UNSAFE_CODE_TASKS) for t in name.split(","))


class TaskSpec(_Spec):
    """A task scored by lm-evaluation-harness against the server a job started (docs/answers.md
    section 2)."""

    name: str
    """An lm-eval task (gsm8k, humaneval, mmlu_pro, ...), or a local task specexp writes itself
    (no download): `specexp_arithmetic` (GSM8K's format) or `specexp_code` (Python functions run
    against their tests; needs `confirm_run_unsafe_code`)."""
    limit: int | None = Field(default=None, ge=1)
    """Items scored (lm-eval --limit); None: every item of the task."""
    items: int = Field(default=60, ge=1)
    """Items of the local task specexp writes (`specexp_arithmetic`; `specexp_code` has 41
    problems and writes at most that many)."""
    num_concurrent: int = Field(default=4, ge=1)
    """Requests lm-eval keeps in flight (its model_args num_concurrent)."""
    model_type: Literal["local-chat-completions", "local-completions"] = "local-chat-completions"
    """lm-eval's OpenAI-compatible model: chat (the chat template applies) or completions."""
    max_gen_toks: int = Field(default=64, ge=1)
    include_path: str | None = None
    """A directory of the user's own lm-eval task YAMLs (lm-eval --include_path)."""
    confirm_run_unsafe_code: bool = False
    """HumanEval, specexp_code and other code tasks run the model's code: lm-eval asks for this
    opt-in (--confirm_run_unsafe_code), and a known code task without it is refused."""
    fewshot: int | None = Field(default=None, ge=0)
    """Few-shot examples (lm-eval --num_fewshot); None: the task's own default."""

    @model_validator(mode="after")
    def _opt_in_to_run_code(self) -> TaskSpec:
        if runs_model_code(self.name) and not self.confirm_run_unsafe_code:
            raise ValueError(
                f"task {self.name} runs the model's code (lm-eval's unsafe_code): set "
                "workload.task.confirm_run_unsafe_code=true to run it"
            )
        return self


KIND_KEYS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("trace_speed", "trace_time_unit", "trace_block_tokens"), ("trace",)),
    (("sample_prompts",), ("samples",)),
    (("search_steps",), ("search",)),
    (("arrival", "burstiness", "num_requests", "duration_s"), ("rate", "search")),
)
"""(keys, kinds): keys that only a workload of those kinds reads, besides the key that chooses the
kind. Set to anything but its default on a workload driven another way, such a key would change
nothing, so it is refused (`WorkloadSpec._keys_of_its_kind`). `max_concurrency` is no such key: every
kind's windows are capped by it."""


class WorkloadSpec(_Spec):
    name: str
    version: int = Field(ge=1)
    description: str = ""
    acceptance_class: Literal["fresh", "copy", "code", "chat", "essay", "none"] = "fresh"
    """Predictability class: which acceptance model of the drafter applies."""
    prompt: str = ""
    """The instruction; builders add the material (source file, padding) around it."""
    material: Literal["none", "source_file", "prose", "filler"] = "none"
    """What the prompt is made of besides the instruction: none, source_file (a real source
    file), prose (real prose, its own start per request or cache group), or filler (random
    words: a named option that records mark `prompt_text: random`), cut to prompt_tokens."""
    prompt_tokens: int = Field(default=64, ge=1)
    """Prompt length in the target model's tokens (re-measured by real servers)."""
    prompt_lengths: list[int] | None = None
    """Several prompt lengths (prefill and prefix-cache sweeps), replacing prompt_tokens."""
    output_tokens: int = Field(default=400, ge=1)
    ignore_eos: bool = True
    concurrency: list[int] = [1]
    repeats: int = Field(default=1, ge=1)
    """Timed windows of each point on one server."""
    server_starts: int = Field(default=1, ge=1, exclude_if=lambda v: v == 1)
    """Fresh server starts per job: the whole workload (its warm-up, every point's `repeats`) runs
    on each in turn, a server of its own started for each, so a figure's interval covers what a
    restart moves as well as what one server's windows do (docs/vocabulary.md, "How sure a figure
    is"). A server specexp does not start (runtime.url) cannot be restarted: 1 there. Left out of
    run ids at 1."""
    warmup: int = Field(default=1, ge=0)
    """Requests sent and discarded before measuring."""
    warmup_per_point: bool = Field(default=True, exclude_if=lambda v: v is True)
    """Closed-loop bursts: before the first timed window of each point (prompt length x concurrency),
    one warm-up window of that many requests of that length, so that every batch shape the point's
    windows use has run once (an engine compiling a kernel or capturing a graph for a new shape does
    it there, not in a timed window). Left out of run ids at its default."""
    rerun_contaminated: int = Field(default=1, ge=0, exclude=True)
    """Closed-loop windows of unique prompts in which the engine's log says it compiled a kernel are
    run again, up to this many times; the last run is kept, marked contaminated if it compiled too.
    Operational: not part of the run id."""
    cache: list[Literal["cold", "warm"]] = ["cold"]
    """Cache states measured, in this order (cold first, then the same prefix again). With a shared
    prefix each entry is one send of it, measured on its own (condition `send`): [cold, warm, warm]
    sends it three times, as a hybrid model's cache finds more on a third send than on a second."""
    shared_prefix: bool = False
    """Requests share their prefix (prefix-cache workloads); otherwise each is unique."""
    suffix_tokens: int = Field(default=16, ge=1, exclude_if=lambda v: v == 16)
    """Cache-reuse prompts: the tokens at the end of a prompt that the next prompt of its group does not
    share (its new suffix: the marker, the instruction, the chat template's end). The simulator shares the
    rest; a real server shares what the prompts' text shares, as its tokenizer counts it (specexp's prompts:
    about 30 tokens of a BPE tokenizer, 95 of the byte-level tokenizer of its config-only folders). Left
    out of run ids at its default."""
    temperature: float = Field(default=0.0, ge=0)
    top_p: float = Field(default=1.0, gt=0, le=1, exclude_if=lambda v: v == 1.0)
    """Nucleus sampling: tokens are drawn from the smallest set holding this much probability
    (1: all). Left out of run ids at its default."""
    thinking: bool = False
    thinking_tokens: int | None = Field(default=None, ge=1, exclude_if=lambda v: v is None)
    """With `thinking` on, the tokens the simulator's model reasons for before it answers: the first
    this many of each completion are its reasoning (a real model decides that itself, and real
    engines ignore it). None: the simulated model answers at once. Left out of run ids while None."""
    samples: int | None = Field(default=None, ge=1, exclude_if=lambda v: v is None)
    """Sampled-output check (docs/answers.md section 1): this many completions of each prompt of
    `sample_prompts`, each with a seed of its own, whose first `output_tokens` tokens are kept so
    that a drafter run's can be tested against its baseline's. None: not a sampling workload."""
    sample_prompts: list[str] = Field(default=[], exclude_if=lambda v: not v)
    """The prompts sampled (each a stratum of the test); [] with `samples`: `prompt` alone."""
    task: TaskSpec | None = Field(default=None, exclude_if=lambda v: v is None)
    """Task scores through lm-evaluation-harness in place of timed windows (workload=task_scores)."""
    endpoint: Literal["chat", "completions"] = Field(
        default="chat", exclude_if=lambda v: v == "chat"
    )
    """Which OpenAI endpoint requests go to: `chat` (/v1/chat/completions, the chat template
    applies) or `completions` (/v1/completions, the prompt as it is). Left out of run ids and
    prompt markers at its default, so chat runs keep the ids they had."""
    request_rate: Annotated[list[float] | None, BeforeValidator(_listed)] = Field(
        default=None, exclude_if=lambda v: v is None
    )
    """Open-loop load: requests per second, each rate its own measurement point (`inf`: all at
    once, a closed-loop burst of num_requests); None: closed-loop bursts of `concurrency`."""
    arrival: Literal["poisson", "constant", "gamma"] = Field(
        default="poisson", exclude_if=lambda v: v == "poisson"
    )
    """How open-loop requests arrive: poisson (exponential gaps), constant (1 / rate apart) or gamma
    (gamma gaps of shape `burstiness`, same mean)."""
    burstiness: float = Field(default=1.0, gt=0, exclude_if=lambda v: v == 1.0)
    """Gamma shape of arrival=gamma: 1 is Poisson, below 1 burstier, above 1 smoother."""
    num_requests: int | None = Field(default=None, ge=1, exclude_if=lambda v: v is None)
    """Requests per open-loop window (or give duration_s)."""
    duration_s: float | None = Field(default=None, gt=0, exclude_if=lambda v: v is None)
    """Length of an open-loop window's schedule: rate x duration_s requests (when num_requests is null)."""
    max_concurrency: int | None = Field(default=None, ge=1, exclude_if=lambda v: v is None)
    """Open-loop cap: a request due while this many are in flight waits for one to finish."""
    search: Literal["max_rate", "max_concurrency"] | None = Field(
        default=None, exclude_if=lambda v: v is None
    )
    """Find the highest load that meets the SLO (`slo`) by bisection between the lowest and highest
    request_rate (max_rate) or concurrency (max_concurrency) given; every step is a recorded window."""
    search_steps: int = Field(default=6, ge=1, le=20, exclude_if=lambda v: v == 6)
    """Most bisection steps of a search, after its two bounds."""
    warmup_output_tokens: int | None = Field(default=16, ge=1, exclude=True)
    """max_tokens of a warm-up request (at most output_tokens); None: output_tokens. Warm-up
    requests count in no figure. Operational: not part of the run id."""
    client_processes: int = Field(default=1, ge=1, exclude=True)
    """Client processes one window is spread over (real HTTP runtimes), for windows one event
    loop cannot keep up with. Operational: not part of the run id."""
    record_chunk_times: bool = Field(default=False, exclude=True)
    """requests.jsonl keeps every token-bearing chunk's arrival (seconds after the request was
    sent) and token count. Operational: not part of the run id."""
    engine_series_interval_s: float | None = Field(default=0.5, gt=0, exclude=True)
    """Seconds between readings of the engine's state while a timed window runs (its metrics
    endpoint; the simulator's own state on its clock): the record's `engine_series`. None: no
    readings. Operational: not part of the run id."""
    # -- sessions, traces and datasets (specexp.workloads.sessions / trace / datasets) --
    session: SessionSpec | None = Field(default=None, exclude_if=lambda v: v is None)
    """Agentic sessions: `concurrency` sessions advance turn by turn, behind a system prompt of
    prompt_tokens shared by all of them. None: no sessions."""
    trace_file: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """A JSONL trace to replay (timestamp, input_length, output_length, optional hash_ids)."""
    trace_speed: float = Field(default=1.0, gt=0, exclude_if=lambda v: v == 1.0)
    """Replay speed of the trace: 2 sends it twice as fast."""
    trace_time_unit: Literal["ms", "s"] = Field(default="ms", exclude_if=lambda v: v == "ms")
    """Unit of the trace's timestamps (Mooncake's traces: milliseconds)."""
    trace_block_tokens: int = Field(default=512, ge=1, exclude_if=lambda v: v == 512)
    """Tokens of one prefix block named by a hash id (Mooncake: 512)."""
    dataset_file: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """Prompts from a local file: ShareGPT-style conversations (JSON) or one prompt per JSONL line
    with an optional category; each category is measured on its own."""

    def _kinds(self) -> list[tuple[str, str]]:
        """Every kind a key set here selects, with that key (a search of max_rate bisects between
        the request rates it is given: those are its own, not a kind of their own)."""
        chosen = [
            (kind, key)
            for kind, key, value in (
                ("session", "session", self.session),
                ("trace", "trace_file", self.trace_file),
                ("dataset", "dataset_file", self.dataset_file),
                ("samples", "samples", self.samples),
                ("task", "task", self.task),
                ("search", "search", self.search),
                ("rate", "request_rate", self.request_rate),
            )
            if value is not None
        ]
        return [c for c in chosen if not (c[0] == "rate" and self.search is not None)]

    @property
    def kind(self) -> str:
        """How it is driven (specexp.workloads.driver): from a file or mode of its own (`session`:
        agentic sessions, `trace`, `dataset`, `samples`: sampled outputs, `task`: an lm-eval task),
        else open-loop (`search`: the highest load within the SLO, `rate`: request rates) or
        closed-loop bursts at each concurrency (`burst`). One at most is chosen (`_one_kind`)."""
        kinds = self._kinds()
        return kinds[0][0] if kinds else "burst"

    @property
    def slots(self) -> int:
        """Requests a server with fixed slots (llama.cpp, Ollama) must run at once: the largest
        concurrency, or an open-loop max_concurrency cap when larger."""
        return max([*self.concurrency, self.max_concurrency or 1])

    @field_validator("concurrency", mode="before")
    @classmethod
    def _at_least_one_in_flight(cls, levels: object) -> object:
        """A level counts requests in flight at once: 0 or fewer would measure nothing."""
        written = levels if isinstance(levels, list) else [levels]
        counts = [v for v in written if isinstance(v, int) and not isinstance(v, bool)]
        if written == [] or any(v < 1 for v in counts):
            raise ValueError(
                "each level must be an integer >= 1 (requests in flight at once), in a list "
                f"such as [1,4] (got {levels!r})"
            )
        return levels

    @model_validator(mode="after")
    def _one_kind(self) -> WorkloadSpec:
        """A workload is driven one way: two keys that each choose a way are refused, not one of
        them silently dropped."""
        kinds = self._kinds()
        if len(kinds) > 1:
            keys = " and ".join(f"workload.{key} ({kind})" for kind, key in kinds)
            raise ValueError(
                f"{keys} each choose how the workload is driven: set one of them (a workload is "
                "one of session, trace, dataset, samples, task, search, rate or burst)"
            )
        return self

    @model_validator(mode="after")
    def _keys_of_its_kind(self) -> WorkloadSpec:
        """A key only another kind of workload reads is refused, not silently ignored."""
        kind = self.kind
        for keys, kinds in KIND_KEYS:
            if kind in kinds:
                continue
            for key in keys:
                value = getattr(self, key)
                if value != type(self).model_fields[key].default:
                    raise ValueError(
                        f"workload.{key}={value} is read only by a {' or '.join(kinds)} workload; "
                        f"this one is driven as {kind} (see docs/options.md, workload)"
                    )
        return self

    @model_validator(mode="after")
    def _open_loop(self) -> WorkloadSpec:
        rates = self.request_rate
        if rates is not None:
            if any(r <= 0 for r in rates):
                raise ValueError(f"request_rate must be > 0 req/s (or inf), got {rates}")
            if self.num_requests is None and self.duration_s is None:
                raise ValueError("request_rate needs workload.num_requests or workload.duration_s")
            if self.num_requests is None and any(r == float("inf") for r in rates):
                raise ValueError(
                    "request_rate=inf needs workload.num_requests (duration_s holds no count at inf)"
                )
        if self.search == "max_rate" and (
            rates is None or len(set(rates)) < 2 or float("inf") in rates
        ):
            raise ValueError(
                "search=max_rate needs workload.request_rate=[LOW,HIGH] (two finite rates to bisect)"
            )
        if self.search == "max_concurrency" and (
            rates is not None or len(set(self.concurrency)) < 2
        ):
            raise ValueError(
                "search=max_concurrency needs workload.concurrency=[LOW,HIGH] and no request_rate"
            )
        return self


class SloSpec(_Spec):
    """Latency objectives a request must meet to count in goodput (config group `slo`)."""

    ttft_s: float | None = Field(default=None, gt=0)
    tpot_s: float | None = Field(default=None, gt=0)
    e2e_s: float | None = Field(default=None, gt=0)
    percentile: float = Field(default=99.0, gt=0, le=100)
    """A load meets the SLO when at least this share (%) of its requests meet every objective."""

    @property
    def active(self) -> bool:
        return any(v is not None for v in (self.ttft_s, self.tpot_s, self.e2e_s))
