"""What every HTTP runtime shares: reach or start the server, stream windows, read counters.

An engine module subclasses `HttpRuntime` and says only what is specific to it: the argv that
starts it, its readiness probe, where its version is, how its counters map onto the
engine-neutral ones, its request extras, its prefix-cache reset and its tokenizer endpoint.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypeVar

import httpx

from specexp.measure.engine_series import PollingSampler
from specexp.measure.events import (
    ClientStats,
    Counters,
    EngineInfo,
    Request,
    RequestTrace,
    RuntimeFailure,
)
from specexp.runtimes.base import Runtime, settings_as
from specexp.runtimes.http import promtext
from specexp.runtimes.http.client import RawStream, send_offsets, stream_window, to_trace
from specexp.runtimes.http.kernel_cache import KernelCache, WindowMark
from specexp.runtimes.http.process import HIGHEST_PORT, ServerProcess, free_port
from specexp.runtimes.http.series import MetricsReader, NoExposition, read_exposition
from specexp.spec.runtime import EndpointRuntimeSpec, ServerRuntimeSpec

E = TypeVar("E", bound=EndpointRuntimeSpec)
"""The settings model of the HTTP engine a subclass drives."""

PROBE_TIMEOUT_S = 5.0


def get(client: httpx.Client, path: str) -> httpx.Response | None:
    """GET `path`; None when the server cannot be reached."""
    try:
        return client.get(path)
    except httpx.HTTPError:
        return None


def json_of(response: httpx.Response | None) -> Any:
    """The JSON body of a 200 response; None for anything else (an error, HTML, nothing)."""
    if response is None or response.status_code != 200:
        return None
    try:
        return response.json()
    except ValueError:
        return None


def messages_of(request: Request) -> list[dict[str, str]]:
    """The chat messages of `request`: its conversation, or its prompt as one user message."""
    if request.messages:
        return [{"role": role, "content": content} for role, content in request.messages]
    return [{"role": "user", "content": request.prompt}]


class HttpRuntime(Runtime[E]):
    """An OpenAI-compatible server, started by specexp or already running at `runtime.url`."""

    source = "measured"
    reusable = True
    default_port: ClassVar[int] = 8000
    highest_port: ClassVar[int] = HIGHEST_PORT
    """The highest port specexp may start this engine on (an engine that derives ports from its
    own sets it lower)."""
    health_path: ClassVar[str] = "/health"
    metrics_path: ClassVar[str | None] = "/metrics"
    chat_path: ClassVar[str] = "/v1/chat/completions"
    completion_path: ClassVar[str] = "/v1/completions"
    load_metrics: ClassVar[tuple[str | None, str | None, str | None]] = (None, None, None)
    """The metrics of requests running, requests waiting and KV-cache use (0-1), where exported."""
    compile_lines: ClassVar[re.Pattern[str] | None] = None
    """Lines of the engine's log that say a kernel compiled while serving (None: it says nothing)."""
    COMPILE_LINES_KEPT: ClassVar[int] = 8
    COMPILE_LINE_CHARS: ClassVar[int] = 300
    triton_kernels: ClassVar[bool] = False
    """The engine compiles Triton kernels at first use: the folders a window adds to the Triton cache
    of a server specexp started are compiles too (specexp.runtimes.http.kernel_cache)."""

    process: ServerProcess | None = None
    port: int | None = None
    argv: list[str] | None = None
    """The argv the server was started with (built once, by `start`)."""
    _discovered_model: str | None = None
    _notes: list[str] | None = None
    _client: ClientStats | None = None
    _series: PollingSampler | None = None
    _reader: MetricsReader | None = None
    _kernels: KernelCache | None = None

    # -- what an engine module says -------------------------------------------------------

    def build_argv(self, port: int) -> list[str] | None:
        """The argv that starts this engine's server on 127.0.0.1:`port` (None: cannot start)."""
        return None

    def choose_port(self) -> int:
        """A free port on 127.0.0.1 for a server specexp starts, at most `highest_port`."""
        return free_port(self.highest_port)

    def server_env(self, port: int) -> dict[str, str]:
        """Environment variables the started server needs besides specexp's own (Ollama's
        OLLAMA_HOST: `ollama serve` takes no flags; vLLM's VLLM_SERVER_DEV_MODE)."""
        return {}

    def served_model(self) -> str:
        """The model name requests carry: runtime.served_model_name; else the name the server
        reported (`_discovered_model`, read by engine_info from a running server); else what it
        was started with, which is the engines' default served name."""
        rt = self.rt
        if rt.served_model_name:
            return rt.served_model_name
        if self._discovered_model:
            return self._discovered_model
        path = rt.model_path if isinstance(rt, ServerRuntimeSpec) else None
        return path or self.spec.model.hf_id or self.spec.model.name

    def request_extras(self, request: Request) -> dict[str, Any]:
        """Engine-specific body fields (per-chunk usage, timings, meta info, thinking switch)."""
        return {"stream_options": {"include_usage": True}}

    def map_counters(self, samples: list[promtext.Sample]) -> Counters:
        """Engine metric samples -> engine-neutral counters."""
        return Counters()

    def engine_info(self, client: httpx.Client) -> EngineInfo:
        return EngineInfo(runtime=self.name, version=None)

    def stream_details(self, raw: RawStream) -> dict[str, Any]:
        """Token counts and timings an engine puts somewhere other than usage/timings."""
        return {}

    def stream_chunks(self, raw: RawStream, path: str) -> RawStream:
        """The chunks of a stream from `path` as OpenAI chunks (an engine's native API rewritten);
        unchanged by default."""
        return raw

    # -- shared behaviour ----------------------------------------------------------------
    def model_ref(self) -> str:
        """What the server loads: runtime.model_path, else the model's Hugging Face id."""
        ref = settings_as(self.spec, ServerRuntimeSpec).model_path or self.spec.model.hf_id
        if not ref:
            raise RuntimeFailure(
                "refused",
                "missing_model",
                f"model={self.spec.model.name} has no hf_id: set runtime.model_path=/path/or/hf-id",
            )
        return ref

    def engine_drafter(self, engine: str) -> tuple[str, int] | None:
        """(the engine's own name for this job's drafter, k), or None without a drafter; refuse a
        drafter the engine does not have, naming the ones it does (the plan skips such cells
        before anything starts: specexp.run.plan)."""
        drafter, k = self.spec.drafter.name, self.spec.k
        if drafter == "none" or k is None:
            return None
        named = self.rt.drafter_name(drafter)
        if named is None:
            accepted = ", ".join(sorted(self.rt.drafters or ()))
            raise RuntimeFailure(
                "refused",
                "unsupported_drafter",
                f"{engine} has no drafter '{drafter}'; accepted: {accepted}",
            )
        return named, k

    def setting_flags(self, flags: Mapping[str, str]) -> list[str]:
        """`[flag, value, ...]` of the runtime settings that are one flag each, for the settings named
        in `flags` (setting -> the engine's flag), in that order; a setting left to the engine's own
        default (null, `auto`, a quantization without an engine name) gives no flag. A model split
        over GPUs adds the engine's own flag for it (`tensor_parallel_flag`), last."""
        rt = self.rt
        values: dict[str, object] = {
            "gpu_memory_utilization": rt.gpu_memory_utilization,
            "max_model_len": rt.max_model_len,
            "kv_cache_dtype": None if rt.kv_cache_dtype == "auto" else rt.kv_cache_dtype,
            "quantization": self.spec.quantization.engine_names.get(self.name),
            "served_model_name": rt.served_model_name,
        }
        argv: list[str] = []
        for setting, flag in flags.items():
            if values[setting] is not None:
                argv += [flag, str(values[setting])]
        if rt.tensor_parallel > 1 and rt.tensor_parallel_flag:
            argv += [rt.tensor_parallel_flag, str(rt.tensor_parallel)]
        return argv

    def draft_model_ref(self) -> str | None:
        """What the engine loads as the draft model of drafter=draft_model: its Hugging Face id."""
        return self.spec.draft_model.hf_id if self.spec.draft_model is not None else None

    def draft_weights(self, engine: str) -> str | None:
        """The drafter's weights to pass (`drafter.weights`): runtime.draft_model_path when given
        (an MTP head or DSpark drafter bundled in the target needs none), else the draft model's
        for drafter=draft_model; a drafter whose weights are separate and not given is refused."""
        drafter = self.spec.drafter
        if drafter.weights == "none":
            return None
        draft = settings_as(self.spec, ServerRuntimeSpec).draft_model_path
        if drafter.cost.uses_draft_model and draft is None:
            draft = self.draft_model_ref()
        if drafter.weights == "separate" and draft is None:
            raise RuntimeFailure(
                "refused",
                "missing_model",
                f"drafter={drafter.name} on {engine} needs runtime.draft_model_path",
            )
        return draft

    @property
    def base_url(self) -> str:
        if self.rt.url:
            return self.rt.url.rstrip("/")
        return f"http://127.0.0.1:{self.port}"

    def headers(self) -> dict[str, str]:
        name = self.rt.api_key_env
        key = os.environ.get(name) if name else None
        return {"Authorization": f"Bearer {key}"} if key else {}

    def server_argv(self) -> list[str] | None:
        return self.argv

    def start(self) -> EngineInfo:
        if not self.rt.url:
            self.port = self.choose_port()
            argv = self.argv = self.build_argv(self.port)
            if argv is None:
                raise RuntimeFailure(
                    "refused", "not_startable", f"runtime={self.name} needs runtime.url=http://..."
                )
            try:
                # specexp's own settings win: a server binds where specexp says (OLLAMA_HOST)
                env = {
                    **settings_as(self.spec, ServerRuntimeSpec).env,
                    **self.server_env(self.port),
                }
                self.process = ServerProcess(argv, self.job_dir / self.log_name, env=env)
                if self.triton_kernels:
                    self._kernels = KernelCache.of_server({**os.environ, **env})
                self.process.wait_ready(self.is_ready, self.rt.start_timeout_s)
            except RuntimeFailure as failure:
                failure.argv = argv
                raise
        elif not self.is_ready():
            raise RuntimeFailure(
                "refused", "unreachable", f"no ready server at {self.base_url}{self.health_path}"
            )
        with self.sync_client() as client:
            return self.engine_info(client)

    def sync_client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, headers=self.headers(), timeout=PROBE_TIMEOUT_S)

    def is_ready(self) -> bool:
        try:
            with self.sync_client() as client:
                return client.get(self.health_path).status_code == 200
        except httpx.HTTPError:
            return False

    def body(self, request: Request) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.served_model(),
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "stream": True,
        }
        if request.ignore_eos:
            body["ignore_eos"] = True
        if request.top_p != 1.0:
            body["top_p"] = request.top_p
        if request.seed is not None:
            body["seed"] = request.seed
        if request.chat:
            body["messages"] = messages_of(request)
        else:
            body["prompt"] = request.prompt
        body.update(self.request_extras(request))
        return body

    def run_window(self, requests: Sequence[Request]) -> list[RequestTrace]:
        bodies = [
            (self.chat_path if r.chat else self.completion_path, self.body(r)) for r in requests
        ]
        rt = self.rt
        window = stream_window(
            self.base_url,
            bodies,
            rt.request_timeout_s,
            self.headers(),
            rt.stall_timeout_s,
            warm_path=self.health_path,
            processes=self.spec.workload.client_processes,
            offsets=send_offsets(requests),
            max_concurrency=self.spec.workload.max_concurrency,
        )
        self._client = ClientStats(
            cpu_s=window.cpu_s, wall_s=window.wall_s, processes=window.processes
        )
        traces = [
            to_trace(
                r.request_id,
                self.stream_chunks(raw, path),
                self.stream_details,
                window.started_at,
                window.wall_offset,
            )
            for r, (path, _), raw in zip(requests, bodies, window.raws)
        ]
        if self.process is not None and not self.process.alive:
            raise RuntimeFailure(
                "failed", "server_died", "the server exited while measuring", self.process.tail()
            )
        return traces

    def client_stats(self) -> ClientStats | None:
        return self._client

    def counters(self) -> Counters:
        if self.metrics_path is None:
            return Counters()
        dropped: list[str] = []
        try:
            with self.sync_client() as client:
                samples = read_exposition(client, self.metrics_path, dropped)
        except NoExposition as err:
            self._note(f"{err}: engine counters unavailable")
            return Counters()
        if dropped:
            self._note(
                f"{self.metrics_path} gave {', '.join(dropped[:4])} as NaN or ±Inf: "
                "left out, as a counter that counts nothing"
            )
        return self.map_counters(samples)

    def _note(self, text: str) -> None:
        self._notes = self._notes or []
        if text not in self._notes:
            self._notes.append(text)

    def notes(self) -> list[str]:
        return list(self._notes or [])

    def log_tail(self) -> str:
        return self.process.tail() if self.process is not None else ""

    def reports_compiles(self) -> bool:
        """Whether this server's log would state a compile during a window (an engine module may need
        the log to show its monitor is on)."""
        return self.compile_lines is not None

    def log_mark(self) -> WindowMark | None:
        if self.process is None or not (self.reports_compiles() or self._kernels):
            return None
        return WindowMark(
            self.process.log_size() if self.reports_compiles() else None,
            self._kernels.entries() if self._kernels is not None else None,
        )

    def compiles_since(self, mark: object | None) -> tuple[str, ...] | None:
        if not isinstance(mark, WindowMark) or self.process is None:
            return None
        said = self.process.log_since(mark.log) if mark.log is not None else ""
        found = [
            line.strip()[: self.COMPILE_LINE_CHARS]
            for line in said.splitlines()
            if self.compile_lines is not None and self.compile_lines.search(line)
        ]
        if self._kernels is not None and mark.kernels is not None:
            found += self._kernels.compiled_since(mark.kernels)
        return tuple(found[: self.COMPILE_LINES_KEPT])

    def engine_series(self, repeat: int = 0) -> PollingSampler | None:
        interval = self.spec.workload.engine_series_interval_s
        if interval is None or self.metrics_path is None:
            return None
        if self._reader is None:
            self._reader = MetricsReader(self)
        if (
            self._series is None or self._series.interval_s != interval
        ):  # a reused server's next job
            self._series = PollingSampler(self._reader, interval)
        return self._series

    def stop(self) -> None:
        if self._reader is not None:
            self._reader.close()
        if self.process is not None:
            self.process.stop()
