"""runtime=llamacpp: llama.cpp's llama-server (facts from docs/engines.md section 3).

Starts `llama-server -m MODEL --host 127.0.0.1 --port P --metrics -np N -c CTX --cache-ram 0` plus
`-ngl all` on GPU hardware and the speculative flags of the drafter (`--spec-type`,
`--spec-draft-model`, `--spec-draft-n-max`); the old `--draft-max` family is gone in this llama.cpp.
`-c` is the context of every slot together (max_model_len x slots); a KV cache that cannot fit the
device beside the weights is refused before anything starts. Version from `/props` `build_info`
(with the llama.cpp commit where the build could not say it); counters from `/metrics`
(`llamacpp:*`); token counts from `/tokenize`; per-request `timings` (with `draft_n`/
`draft_n_accepted` when drafting happened) are kept as engine timings.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx

from specexp.measure.events import Counters, EngineInfo, Request, RuntimeFailure
from specexp.roofline.memory import kv_bytes_per_token
from specexp.runtimes.base import register
from specexp.runtimes.gguf_files import gguf_path, weight_bytes
from specexp.runtimes.http import promtext
from specexp.runtimes.http.server_runtime import HttpRuntime, json_of
from specexp.spec import paths
from specexp.spec.cache import cache_dir
from specexp.spec.runtime import LlamacppRuntimeSpec

LLAMA_CPP_PYTHON_VERSION = "0.3.36"
"""The llama-cpp-python sdist whose vendored llama.cpp scripts/build-llama-server.sh builds."""
SDIST_COMMITS = {"0.3.36": "0c1e57098"}
"""llama-cpp-python sdist -> the llama.cpp commit it vendors (source: the sdist's CHANGELOG.md,
"[0.3.36] feat: update llama.cpp to ggml-org/llama.cpp@0c1e57098"). The sdist has no .git, so a
build from it reports build_info "b0-unknown" unless the commit is passed to CMake."""
COMMIT_FILE = "llama.cpp-commit"
"""A file beside the binary's bin/ folder naming the commit it was built from (benchmarks/gpu writes it)."""
HOST_PROMPT_CACHE_FLAGS = ("--cache-ram", "-cram")
NGRAM_SIZE_N = 3
"""The n-gram ngram-simple matches (`--spec-ngram-simple-size-n`; llama.cpp's default 12 drops
every draft shorter than 12: docs/engines.md 3.1). min(3, k) drafts on copy-edits."""
GPU_LAYER_FLAGS = ("-ngl", "--gpu-layers", "--n-gpu-layers")

DRAFT_FILE_WEIGHTS = ("separate", "either")
"""A drafter whose weights are its own (or may be: DSpark) needs its own GGUF: a GGUF holds one model."""


def gguf_file_type(ftype: str) -> str:
    """llama-server's model_ftype text as a GGUF file type name: "all F32" -> F32,
    "Q4_K - Medium" -> Q4_K_M (llama_model_ftype_name in src/llama-model-loader.cpp)."""
    name = ftype.strip()
    for prefix in ("all ", "mostly "):
        if name.lower().startswith(prefix):
            name = name[len(prefix) :]
    for words, suffix in ((" - Medium", "_M"), (" - Small", "_S"), (" - Large", "_L")):
        name = name.replace(words, suffix)
    return name.replace(" ", "_").upper()


def default_executable() -> Path:
    """$SPECEXP_LLAMA_SERVER, else the binary scripts/build-llama-server.sh caches."""
    env = os.environ.get("SPECEXP_LLAMA_SERVER")
    if env:
        return Path(env)
    return cache_dir() / "llama-server" / LLAMA_CPP_PYTHON_VERSION / "bin" / "llama-server"


def commit_of(build_info: str | None, executable: str) -> tuple[str | None, str | None]:
    """(the llama.cpp commit a server was built from, where that came from)."""
    if build_info and "-" in build_info and not build_info.endswith("-unknown"):
        return build_info.rsplit("-", 1)[1], "build_info"
    exe = Path(executable)
    marker = exe.parent.parent / COMMIT_FILE
    if marker.is_file() and marker.read_text().strip():
        return marker.read_text().strip(), str(marker)
    for version, commit in SDIST_COMMITS.items():
        built = cache_dir() / "llama-server" / version / "bin" / "llama-server"
        if exe == built or exe == default_executable() == built:
            return commit, f"llama-cpp-python {version} sdist CHANGELOG.md"
    return None, None


@register(LlamacppRuntimeSpec)
class LlamaCppRuntime(HttpRuntime[LlamacppRuntimeSpec]):
    default_port = 8080
    _launch: dict[str, Any] = {}
    """Launch facts for the record: ctx_size, ctx_per_slot, host_prompt_cache_mib, gpu_layers."""

    def build_argv(self, port: int) -> list[str]:
        spec, rt = self.spec, self.rt
        slots = spec.workload.slots
        context = rt.max_model_len or spec.model.max_position_embeddings
        executable = rt.executable or str(default_executable())
        model_file = gguf_path(spec.model, rt.model_path)
        draft_file = self._draft_file()
        self._check_kv_fits(context, slots, model_file, draft_file)
        argv = [
            executable,
            "-m",
            model_file,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--metrics",
            "-np",
            str(slots),
            "-c",
            str(context * slots),
        ]
        extra = list(rt.extra_args)
        self._launch = {"ctx_size": context * slots, "ctx_per_slot": context}
        # llama-server's host prompt cache (default 8192 MiB) copies a slot's KV to host memory before
        # the next request and adds seconds to a long cold TTFT: off unless extra_args set it
        cram = _flag_value(extra, HOST_PROMPT_CACHE_FLAGS)
        if cram is None:
            argv += ["--cache-ram", "0"]
            cram = "0"
        self._launch["host_prompt_cache_mib"] = int(cram) if cram.lstrip("-").isdigit() else cram
        ngl = _flag_value(extra, GPU_LAYER_FLAGS)
        if ngl is None and spec.hardware.gpu_count > 0:
            argv += ["-ngl", "all"]  # every layer on the GPU, not the build's "auto" fit
            ngl = "all"
        self._launch["gpu_layers"] = (
            ngl if ngl is not None else "build default (no GPU: hardware.gpu_count 0)"
        )
        if rt.prefix_caching:
            # POST /slots/{id}?action=erase (the prefix-cache reset) answers 501 unless slot actions
            # are enabled, and --slot-save-path is what enables them (checked on a real llama-server)
            slots_dir = self.job_dir / "slots"
            slots_dir.mkdir(parents=True, exist_ok=True)
            argv += ["--slot-save-path", str(slots_dir)]
        else:
            argv.append("--no-cache-prompt")
        if rt.served_model_name:
            argv += ["--alias", rt.served_model_name]
        argv += self._speculative_args(draft_file)
        return argv + extra

    def _draft_file(self) -> str | None:
        spec = self.spec
        if spec.drafter.weights not in DRAFT_FILE_WEIGHTS or spec.k is None:
            return None
        if self.rt.draft_model_path:
            return self.rt.draft_model_path
        return gguf_path(spec.draft_model, None) if spec.draft_model is not None else None

    def _check_kv_fits(
        self, context: int, slots: int, model_file: str, draft_file: str | None
    ) -> None:
        """Refuse a server whose KV cache (context x slots) and weights cannot fit the device."""
        spec, kv_dtype = self.spec, self.rt.kv_cache_dtype
        hw = spec.hardware
        device = (hw.engine_memory_gib or hw.memory_gib) * max(hw.gpu_count, 1) * 2**30
        tokens = context * slots
        kv = tokens * kv_bytes_per_token(spec.model, kv_dtype)
        weights = weight_bytes(spec.model, spec.quantization.bytes_per_weight["mlp"], model_file)
        if draft_file is not None and spec.draft_model is not None:
            kv += tokens * kv_bytes_per_token(
                spec.draft_model, kv_dtype
            )  # the draft's context is the target's
            weights += weight_bytes(
                spec.draft_model, spec.quantization.bytes_per_weight["mlp"], draft_file
            )
        if kv + weights <= device:
            return
        per_token = kv / tokens
        fits = int((device - weights) / per_token / slots) if device > weights else 0
        raise RuntimeFailure(
            "refused",
            "kv_cache_does_not_fit",
            f"llama-server -c {tokens:,} (max_model_len {context:,} x {slots} slots) needs "
            f"{kv / 1e9:,.1f} GB of KV cache ({per_token / 1024:,.0f} KiB per token, {kv_dtype} KV) beside "
            f"{weights / 1e9:,.1f} GB of weights, more than the {device / 2**30:,.1f} GiB of hardware={hw.name}; "
            f"set runtime.max_model_len to at most {fits:,} or use fewer slots (workload.concurrency)",
        )

    def _speculative_args(self, draft: str | None) -> list[str]:
        spec = self.spec
        drafter = spec.drafter.name
        drafted = self.engine_drafter("llama.cpp")
        if drafted is None:
            return []
        spec_type, k = drafted
        args = ["--spec-type", spec_type, "--spec-draft-n-max", str(k)]
        if drafter == "ngram":
            # ngram-simple drafts the m tokens after the last n-gram of the context (prompt and
            # output) seen before; m is its k. It drops a draft shorter than n, and n defaults to 12
            # (docs/engines.md 3.1): left at that, k < 12 never drafts. n is min(3, k) unless
            # extra_args set it.
            args += ["--spec-ngram-simple-size-m", str(k)]
            if self._ngram_n(k) is not None:
                args += ["--spec-ngram-simple-size-n", str(self._ngram_n(k))]
        if self.spec.drafter.weights in DRAFT_FILE_WEIGHTS:
            if draft is None:
                raise RuntimeFailure(
                    "refused", "missing_model", f"drafter={drafter} needs runtime.draft_model_path"
                )
            args = ["--spec-draft-model", draft, *args]
            if (
                spec.hardware.gpu_count > 0
                and _flag_value(list(self.rt.extra_args), ("-ngld", "--spec-draft-ngl")) is None
            ):
                args += ["-ngld", "all"]
        return args

    def _ngram_n(self, k: int) -> int | None:
        """The n-gram length specexp sets for ngram-simple (None: the user's extra_args set it)."""
        if _flag_value(list(self.rt.extra_args), ("--spec-ngram-simple-size-n",)):
            return None
        return min(NGRAM_SIZE_N, k)

    def drafter_config(self) -> str | None:
        """ngram: "ngram-simple n=N m=K", the match length beside the draft length k."""
        if self.spec.drafter.name != "ngram" or self.spec.k is None:
            return None
        n = self._ngram_n(self.spec.k)
        given = _flag_value(list(self.rt.extra_args), ("--spec-ngram-simple-size-n",))
        return f"ngram-simple n={n if n is not None else given} m={self.spec.k}"

    def served_model(self) -> str:
        return self.rt.served_model_name or self.spec.model.name

    def request_extras(self, request: Request) -> dict[str, Any]:
        extras: dict[str, Any] = {
            "stream_options": {"include_usage": True},
            "timings_per_token": True,
        }
        if request.chat and request.thinking is not None:
            extras["chat_template_kwargs"] = {"enable_thinking": request.thinking}
        return extras

    load_metrics = ("llamacpp:requests_processing", "llamacpp:requests_deferred", None)

    def map_counters(self, samples: list[promtext.Sample]) -> Counters:
        def t(name):
            return promtext.total(samples, f"llamacpp:{name}")

        spec_on = self.spec.drafter.name != "none"
        return Counters(
            drafts=t("spec_decode_num_drafts_total") if spec_on else None,
            draft_tokens=t("spec_decode_num_draft_tokens_total") if spec_on else None,
            accepted=t("spec_decode_num_accepted_tokens_total") if spec_on else None,
            accepted_per_position=self._per_position(samples) if spec_on else None,
            prompt_tokens=t("prompt_tokens_total"),
            cached_prompt_tokens=t("prompt_tokens_cached_total"),
            generation_tokens=t("tokens_predicted_total"),
        )

    def _per_position(self, samples: list[promtext.Sample]) -> tuple[float, ...] | None:
        """The positions the engine reports, as it reports them. The family appears only once a slot
        has drafted (then sized to the drafter's n_max, server-context.cpp), so a position it does
        not list is unknown, not 0 % accepted: nothing is padded, and no family at all is None."""
        found = promtext.positions(
            samples, "llamacpp:spec_decode_num_accepted_tokens_per_pos_total"
        )
        return tuple(found) if found else None

    def engine_info(self, client: httpx.Client) -> EngineInfo:
        props = json_of(client.get("/props"))
        slots = json_of(client.get("/slots"))
        n_ctx = sum(int(s.get("n_ctx") or 0) for s in slots) if isinstance(slots, list) else None
        speculative = (
            any(bool(s.get("speculative")) for s in slots) if isinstance(slots, list) else None
        )
        ftype = props.get("model_ftype") if isinstance(props, dict) else None
        self._check_file_type(ftype)
        version = props.get("build_info") if isinstance(props, dict) else None
        details: dict[str, Any] = {
            "total_slots": props.get("total_slots") if isinstance(props, dict) else None,
            "model_ftype": props.get("model_ftype") if isinstance(props, dict) else None,
            "speculative": speculative,
        }
        if not self.rt.url:  # what specexp started it with
            details.update(self._launch)
            commit, source = commit_of(version, self.rt.executable or str(default_executable()))
            details.update(llama_cpp_commit=commit, llama_cpp_commit_source=source)
        return EngineInfo(
            runtime=self.name, version=version, kv_cache_tokens=n_ctx or None, details=details
        )

    def _check_file_type(self, ftype: object) -> None:
        """Refuse a run whose `quantization` label is not what the GGUF holds: the record would
        otherwise compare, say, Q4_K_M weights as FP8 ones."""
        if not isinstance(ftype, str) or not ftype.strip():
            return
        loaded = gguf_file_type(ftype)
        q = self.spec.quantization
        expected = q.engine_names.get("llamacpp")
        if expected is None or expected.upper() != loaded:
            known = ", ".join(sorted(paths.options("quantization")))
            raise RuntimeFailure(
                "refused",
                "quantization_mismatch",
                f"the GGUF holds {loaded} weights (llama-server /props model_ftype '{ftype}') but the run is "
                f"labelled quantization={q.name} (llama.cpp: {expected or 'no GGUF file type'}); set quantization= "
                f"to the matching scheme (accepted: {known})",
            )

    def tokenize(self, text: str) -> list[int] | None:
        with self.sync_client() as client:
            response = client.post("/tokenize", json={"content": text, "add_special": False})
        data = json_of(response)
        return (
            [int(t) for t in data["tokens"]]
            if isinstance(data, dict) and "tokens" in data
            else None
        )

    def count_prompt(self, request: Request) -> int | None:
        """A chat request's body as it is sent, to `POST /v1/chat/completions/input_tokens`
        (`{"input_tokens": N}`: the template applied and tokenized with its special tokens, as a
        completion is; docs/engines.md 3.6); a completion's prompt to `/tokenize` with
        `add_special`, as `/v1/completions` tokenizes it."""
        with self.sync_client() as client:
            if request.chat:
                data = json_of(
                    client.post("/v1/chat/completions/input_tokens", json=self.body(request))
                )
                count = data.get("input_tokens") if isinstance(data, dict) else None
                return int(count) if isinstance(count, int) else None
            response = client.post(
                "/tokenize", json={"content": request.prompt, "add_special": True}
            )
        data = json_of(response)
        tokens = data.get("tokens") if isinstance(data, dict) else None
        return len(tokens) if isinstance(tokens, list) else None

    def detokenize(self, tokens: list[int]) -> str | None:
        with self.sync_client() as client:
            response = client.post("/detokenize", json={"tokens": tokens})
        data = json_of(response)
        return str(data["content"]) if isinstance(data, dict) and "content" in data else None

    def reset_prefix_cache(self) -> bool:
        """Erase every slot's cache (`POST /slots/{id}?action=erase`); True when all said so."""
        with self.sync_client() as client:
            slots = json_of(client.get("/slots"))
            if not isinstance(slots, list):
                return False
            ok = [
                client.post(f"/slots/{s['id']}", params={"action": "erase"}).status_code == 200
                for s in slots
            ]
        return all(ok)


def _flag_value(argv: list[str], names: tuple[str, ...]) -> str | None:
    """The value given to any of `names` in `argv` (`-x V` or `-x=V`), else None."""
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                return argv[i + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None
