"""What an Ollama can serve and draft: a GGUF imported through its own API, and its version.

Ollama serves models by name from its own store. A GGUF specexp knows (a packaged trained model,
one specexp writes, or `runtime.model_path=FILE.gguf`) enters that store as Ollama's `ollama create`
does it: the file is uploaded as a blob (`POST /api/blobs/sha256:<digest>`, skipped when `HEAD`
finds it) and a model is created from it (`POST /api/create` with `files`), whose chat template
Ollama takes from the GGUF (server/create.go, server/model.go `detectChatTemplate`). The name is
`specexp/<model>-<quantization>:<digest[:12]>`, so the same file is imported once per store.

Speculative decoding depends on the version (docs/engines.md sections 4 and 4.1; the rule is
`OllamaRuntimeSpec.drafts_from`): Ollama 0.24.0 drafts nothing for GGUF models (MTP and draft
models run only in its experimental MLX runner, built with `MLX_ENGINE=ON`); from 0.30 its GGUF
runner is upstream llama-server, which Ollama 0.33 starts with `--spec-type`.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import subprocess
from pathlib import Path

import httpx

from specexp.measure.events import RuntimeFailure

VERSION_PROBE_S = 20.0
_VERSION = re.compile(r"(?:client version is|ollama version is)\s+v?(\S+)")


@functools.lru_cache(maxsize=8)
def binary_version(executable: str) -> str | None:
    """The version an `ollama` binary says it is (`ollama --version`, asked of no server: the
    probe points OLLAMA_HOST at a closed port, so a running Ollama cannot answer for the binary);
    None when there is no such binary or it says nothing readable."""
    env = {**os.environ, "OLLAMA_HOST": "127.0.0.1:9"}
    try:
        done = subprocess.run(
            [executable, "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_PROBE_S,
            env=env,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    found = _VERSION.search(done.stdout + done.stderr)
    return found.group(1) if found else None


@functools.lru_cache(maxsize=32)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def file_digest(path: Path) -> str:
    """The SHA-256 of a file (read once per size and modification time)."""
    stat = path.stat()
    return _digest(str(path), stat.st_size, stat.st_mtime_ns)


def model_tag(model: str, quantization: str, digest: str, template: str | None = None) -> str:
    """The name a GGUF specexp imports is served under: its digest, and the chat template it is
    imported with (a new template is a new model)."""
    clean = re.sub(r"[^a-z0-9._-]", "-", f"{model}-{quantization}".lower())
    if template is not None:
        digest = hashlib.sha256(f"{digest}\n{template}".encode()).hexdigest()
    return f"specexp/{clean}:{digest[:12]}"


CHATML_SYSTEM = (
    '{{- $system := false }}{{- range .Messages }}{{- if eq .Role "system" }}'
    "{{- $system = true }}{{- end }}{{- end }}\n"
    "{{- if not $system }}<|im_start|>system\n"
)
CHATML_TURNS = (
    "{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}"
    "<|im_start|>assistant\n"
)
"""ChatML as a Go template for Ollama: the model's default system message where a chat has none
(CHATML_SYSTEM + it + <|im_end|>), then every turn, then the assistant's."""
_DEFAULT_SYSTEM = re.compile(r"<\|im_start\|>system\\n([^<'\"]+?)<\|im_end\|>")


def ollama_template(gguf: Path) -> str | None:
    """A Go template that renders a chat as the GGUF's own (Jinja) chat template does, for a
    ChatML model (Qwen's: `<|im_start|>role ... <|im_end|>`, and the system message it adds when
    a chat has none); None for any other family, left to Ollama's own matching. Ollama 0.24 takes
    a template only when a known one is within 100 edits of the GGUF's (template/template.go
    `Named`): Qwen2.5's is not, and without one Ollama sends a chat's last message bare."""
    import gguf as gguf_lib

    field = gguf_lib.GGUFReader(str(gguf)).fields.get("tokenizer.chat_template")
    jinja = field.contents() if field is not None else None
    if not isinstance(jinja, str) or "<|im_start|>" not in jinja:
        return None
    default = _DEFAULT_SYSTEM.search(jinja)
    if default is None:
        return CHATML_TURNS
    return f"{CHATML_SYSTEM}{default.group(1)}<|im_end|>\n{{{{ end }}}}\n{CHATML_TURNS}"


def has_model(client: httpx.Client, tag: str) -> bool:
    """Whether the server's store holds `tag` (`GET /api/tags`)."""
    response = client.get("/api/tags")
    if response.status_code != 200:
        return False
    models = response.json().get("models") or []
    return any(isinstance(m, dict) and tag in (m.get("name"), m.get("model")) for m in models)


def import_gguf(
    client: httpx.Client, path: Path, tag: str, timeout_s: float, template: str | None = None
) -> None:
    """Put `path` into the server's store as `tag` (with a chat `template` when given); Ollama's
    own refusal as a RuntimeFailure."""
    digest = f"sha256:{file_digest(path)}"
    long = httpx.Timeout(timeout_s, connect=10.0)
    if client.head(f"/api/blobs/{digest}").status_code != 200:
        with path.open("rb") as handle:
            sent = client.post(f"/api/blobs/{digest}", content=handle, timeout=long)
        _raise_unless_ok(sent, f"uploading {path.name}")
    body: dict[str, object] = {"model": tag, "files": {path.name: digest}, "stream": False}
    if template is not None:
        body["template"] = template
    made = client.post("/api/create", json=body, timeout=long)
    _raise_unless_ok(made, f"creating {tag} from {path.name}")


def _raise_unless_ok(response: httpx.Response, doing: str) -> None:
    if response.status_code in (200, 201):
        return
    try:
        said = response.json().get("error") or response.text
    except ValueError:
        said = response.text
    raise RuntimeFailure(
        "refused",
        "missing_model",
        f"Ollama refused {doing}: HTTP {response.status_code}: {str(said)[:300]}",
    )
