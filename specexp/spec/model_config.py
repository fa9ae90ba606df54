"""A model spec from its Hugging Face `config.json`: `model=hf model.config_json=PATH`, or
`model=hf model.hf_id=ORG/NAME` (the local Hugging Face cache, else the Hub when it is reachable).

conf/model/ files use the field names of config.json, so most fields are read as they are. What
needs reading:

- a multimodal wrapper (`text_config`): its language model's fields;
- a hybrid layout (`layer_types` of `linear_attention` and `full_attention`, Qwen3.5's Gated
  DeltaNet): `architecture: hybrid`, `full_attention_interval` from the layer pattern and the
  `linear_*` fields; a pattern that is not one full layer every N is refused;
- MTP layers (`mtp_num_hidden_layers`, Qwen3.5 / Qwen3-Next; `num_nextn_predict_layers`,
  DeepSeek-V3 and GLM): `mtp`;
- `head_dim` (else hidden / heads), `num_key_value_heads` (else the heads), `torch_dtype` (or
  newer transformers' `dtype`), YaRN (`rope_scaling` or `rope_parameters` of type yarn: its factor);
- `quantization_config`: its `quant_method` is named in `quantization_hint` (the weights specexp
  simulates are the `quantization=` group's; choose the matching one);
- a mixture of experts: `moe` from `num_experts` (or `n_routed_experts`, DeepSeek and GLM;
  `num_local_experts`, Mixtral and gpt-oss), `num_experts_per_tok` (or `experts_per_token`),
  `moe_intermediate_size` (else `intermediate_size`, Mixtral's expert width), a shared expert
  (`shared_expert_intermediate_size`, Qwen; `n_shared_experts` x the expert width, DeepSeek and
  GLM) and leading dense layers (`first_k_dense_replace`); sparse layers other than every layer
  after those (`decoder_sparse_step` > 1, `mlp_only_layers`) are refused;
- multi-head latent attention (`kv_lora_rank`, DeepSeek-V2/V3): refused, since its compressed KV
  cache is not what the roofline counts.

What a config lacks is a one-line error naming the file and the field.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specexp.spec.errors import SpecError

REQUIRED = (
    "num_hidden_layers",
    "hidden_size",
    "intermediate_size",
    "num_attention_heads",
    "vocab_size",
    "max_position_embeddings",
)
COPIED = (
    *REQUIRED,
    "tie_word_embeddings",
    "linear_num_key_heads",
    "linear_num_value_heads",
    "linear_key_head_dim",
    "linear_value_head_dim",
    "linear_conv_kernel_dim",
)
MOE_KEYS = ("num_experts", "n_routed_experts", "num_local_experts")
TOP_K_KEYS = ("num_experts_per_tok", "experts_per_token")
HUB = "https://huggingface.co"


def _hub_cache() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface"))
    return home / "hub"


def cached_config(hf_id: str) -> Path | None:
    """config.json of `hf_id` in the local Hugging Face cache (its newest snapshot), or None."""
    snapshots = _hub_cache() / f"models--{hf_id.replace('/', '--')}" / "snapshots"
    found = sorted(snapshots.glob("*/config.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    return found[0] if found else None


def fetch_config(hf_id: str, where: str) -> dict[str, Any]:
    """config.json of `hf_id`: from the local cache, else downloaded from the Hub."""
    local = cached_config(hf_id)
    if local is not None:
        return read_json(local, where)
    import httpx

    url = f"{HUB}/{hf_id}/resolve/main/config.json"
    token = os.environ.get("HF_TOKEN")
    try:
        response = httpx.get(
            url,
            timeout=10,
            follow_redirects=True,
            headers={"authorization": f"Bearer {token}"} if token else None,
        )
    except httpx.HTTPError as err:
        raise SpecError(
            where,
            "model.hf_id",
            f"{hf_id}: not in the local Hugging Face cache "
            f"({_hub_cache()}) and the Hub is not reachable ({type(err).__name__}); "
            "give model.config_json=PATH",
        ) from None
    if response.status_code != 200:
        raise SpecError(
            where,
            "model.hf_id",
            f"{hf_id}: the Hub answered {response.status_code} for "
            "config.json (a gated model needs HF_TOKEN); give model.config_json=PATH",
        )
    return dict(response.json())


def read_json(path: Path, where: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise SpecError(where, "model.config_json", f"{path}: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise SpecError(
            where, "model.config_json", f"{path}: not JSON ({err.msg}, line {err.lineno})"
        ) from None
    if not isinstance(data, dict):
        raise SpecError(where, "model.config_json", f"{path}: not a JSON object")
    return data


def model_fields(config: Mapping[str, Any], source: str) -> dict[str, Any]:
    """ModelSpec fields from a config.json's contents (`source` names it in errors)."""
    text = dict(config.get("text_config") or config)
    architectures = list(config.get("architectures") or text.get("architectures") or [])
    if text.get("kv_lora_rank"):
        raise SpecError(
            source,
            "model.kv_lora_rank",
            "multi-head latent attention: its compressed KV cache is not what specexp's "
            "roofline counts; not supported",
        )
    missing = [k for k in REQUIRED if text.get(k) is None]
    if missing:
        raise SpecError(source, f"model.{missing[0]}", f"config.json has no {', '.join(missing)}")
    fields: dict[str, Any] = {k: text[k] for k in COPIED if text.get(k) is not None}
    fields["architectures"] = architectures
    heads = int(text["num_attention_heads"])
    fields["num_key_value_heads"] = int(text.get("num_key_value_heads") or heads)
    fields["head_dim"] = int(text.get("head_dim") or int(text["hidden_size"]) // heads)
    dtype = (
        text.get("torch_dtype")
        or text.get("dtype")
        or config.get("torch_dtype")
        or config.get("dtype")
    )
    if dtype:
        fields["torch_dtype"] = str(dtype)
    fields.update(_layout(text, source))
    fields["moe"] = _experts(text, source)
    mtp = text.get("mtp_num_hidden_layers") or text.get("num_nextn_predict_layers")
    fields["mtp"] = {"num_hidden_layers": int(mtp)} if mtp else None
    if text.get("mamba_ssm_dtype") in ("float32", "bfloat16"):
        fields["linear_state_dtype"] = text["mamba_ssm_dtype"]
    rope = text.get("rope_scaling") or text.get("rope_parameters") or {}
    if (
        isinstance(rope, Mapping)
        and rope.get("rope_type", rope.get("type")) == "yarn"
        and rope.get("factor")
    ):
        fields["yarn_factor"] = float(rope["factor"])
    return fields


def _layout(text: Mapping[str, Any], source: str) -> dict[str, Any]:
    types = text.get("layer_types")
    if not types or set(types) <= {"full_attention", "sliding_attention"}:
        return {"architecture": "dense"}
    full = [i for i, t in enumerate(types) if t == "full_attention"]
    interval = full[0] + 1 if full else 0
    if (
        not full
        or set(types) - {"full_attention", "linear_attention"}
        or full != list(range(interval - 1, len(types), interval))
    ):
        raise SpecError(
            source,
            "model.layer_types",
            "a layer pattern other than one full-attention layer every N "
            f"linear-attention ones ({sorted(set(types))}): not supported",
        )
    missing = [k for k in COPIED if k.startswith("linear_") and text.get(k) is None]
    if missing:
        raise SpecError(
            source, f"model.{missing[0]}", f"a hybrid config.json without {', '.join(missing)}"
        )
    return {"architecture": "hybrid", "full_attention_interval": interval}


def _experts(text: Mapping[str, Any], source: str) -> dict[str, int] | None:
    experts = next((int(text[k]) for k in MOE_KEYS if text.get(k)), 0)
    if not experts:
        return None
    top_k = next((int(text[k]) for k in TOP_K_KEYS if text.get(k)), 0)
    if not top_k:
        raise SpecError(
            source,
            "model.num_experts_per_tok",
            f"a mixture of {experts} experts without num_experts_per_tok (or experts_per_token)",
        )
    if int(text.get("decoder_sparse_step") or 1) != 1 or text.get("mlp_only_layers"):
        raise SpecError(
            source,
            "model.decoder_sparse_step",
            "sparse layers other than every layer after the first_k_dense_replace dense ones "
            "(decoder_sparse_step > 1 or mlp_only_layers): not supported",
        )
    width = int(text.get("moe_intermediate_size") or text["intermediate_size"])
    shared = (
        int(text.get("shared_expert_intermediate_size") or 0)
        or int(text.get("n_shared_experts") or 0) * width
    )
    return {
        "num_experts": experts,
        "num_experts_per_tok": top_k,
        "moe_intermediate_size": width,
        "shared_expert_intermediate_size": shared,
        "first_k_dense_replace": int(text.get("first_k_dense_replace") or 0),
    }


def quantization_hint(config: Mapping[str, Any]) -> str | None:
    """The checkpoint's own quantization method (`quantization_config.quant_method`), if any."""
    quant = config.get("quantization_config") or (config.get("text_config") or {}).get(
        "quantization_config"
    )
    return (
        str(quant.get("quant_method"))
        if isinstance(quant, Mapping) and quant.get("quant_method")
        else None
    )


def _name_of(config: Mapping[str, Any], hf_id: object, path: object) -> str:
    """What records call a model read from a config.json (never `hf`, so two files are two models):
    the Hub id's name, else the config's `_name_or_path`, else the folder of a `config.json`, else
    the file's stem (`qwen-7b.json` -> qwen-7b)."""
    named = config.get("_name_or_path")
    file = Path(str(path)) if path else None
    fallback = file.parent.name if file and file.name == "config.json" else (file and file.stem)
    chosen = hf_id or (named if isinstance(named, str) and named.strip() else None) or fallback
    return str(chosen or "hf").rstrip("/").split("/")[-1].lower()


def from_config_json(model: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The model group's data with the fields of its config.json filled in: `config_json` (a
    path) or `hf_id` (the cache or the Hub) when the option asks for it (`from_config: true`),
    and what the option states itself on top (an override such as model.max_position_embeddings)."""
    path = model.get("config_json")
    hf_id = model.get("hf_id")
    if path:
        config, source = read_json(Path(str(path)).expanduser(), where), str(path)
    elif hf_id:
        config, source = fetch_config(str(hf_id), where), f"{hf_id}/config.json"
    else:
        raise SpecError(
            where,
            "model.config_json",
            "model=hf reads a config.json: give model.config_json=PATH or model.hf_id=ORG/NAME",
        )
    fields = model_fields(config, source)
    stated = {
        k: v for k, v in model.items() if v is not None and k not in ("from_config", "config_json")
    }
    name = stated.pop("name", None)
    if not name or name == "hf":
        name = _name_of(config, hf_id, path)
    return {
        **fields,
        **stated,
        "name": name,
        "hf_id": hf_id,
        "config_json": str(path) if path else None,
    }
