"""Config-only Hugging Face model folders, for engines that fill the weights themselves.

vLLM and SGLang serve a model without its weights with `--load-format dummy`: they read its
`config.json`, allocate every parameter and fill it (vLLM: uniform in (-1e-3, 1e-3) from a fixed
seed per parameter, so two servers of one model agree; docs/engines.md). People benchmark engines
this way, and specexp does it for any conf/model/ shape (`runtime.load_format=dummy`) without a
download: a folder holds

- `config.json`, the model's fields under the Hugging Face architecture its `architectures` names
  (dense Qwen3 and Llama, Qwen3's mixture of experts, and Qwen3.5's hybrid of Gated DeltaNet and gated full attention, with its
  MTP layer where the model has one), and the defaults of that family for what conf/model/ does
  not state (norm epsilon, rope);
- `generation_config.json`;
- a byte-level tokenizer (tiny_hf's: one token per byte, then ChatML's specials) padded to the
  model's vocabulary with tokens `<wN>` that no text encodes to, so that every id the model can
  emit decodes, and prompts are cut to exact lengths by the server's own count.

A draft model is written the same way (a conf/model/ shape of its own: with the same vocabulary and
hidden size as its target, the dummy loader gives it the target's embedding and lm_head values too),
and an EAGLE-3 head as the config vLLM's `eagle3` method loads (`eagle3_config`).

The files depend on the model's fields only, so the folder is cached under a digest of them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from specexp.models import tiny_hf
from specexp.spec.experiment import DrafterSpec, ModelSpec

FORMAT_VERSION = 2
"""Bump on any change to the written files; part of the cache key. 2: the hybrid's
`full_attention_interval` and image and video processor files (SGLang needs both)."""

BOS_ID, EOS_ID = tiny_hf.BOS_ID, tiny_hf.EOS_ID

DENSE = {
    "Qwen3ForCausalLM": {"model_type": "qwen3", "rms_norm_eps": 1e-6, "rope_theta": 1_000_000.0},
    "LlamaForCausalLM": {"model_type": "llama", "rms_norm_eps": 1e-5, "rope_theta": 500_000.0},
}
"""Dense architectures written, with the family's defaults for what conf/model/ does not state
(Qwen3-8B's and Llama-3.1-8B's config.json)."""
MOE = {
    "Qwen3MoeForCausalLM": {
        "model_type": "qwen3_moe",
        "rms_norm_eps": 1e-6,
        "rope_theta": 1_000_000.0,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
        "norm_topk_prob": True,
    }
}
"""Mixture-of-experts architectures written, with the family's defaults (Qwen3-30B-A3B's
config.json: every layer sparse, top-k weights renormalized, no shared expert)."""
HYBRID = "Qwen3_5ForConditionalGeneration"
"""Qwen3.5's hybrid layout (text_config of model_type qwen3_5_text; vLLM registers it under this
multimodal architecture only, and serves its text model alone with `--language-model-only`)."""
EAGLE3 = "LlamaForCausalLMEagle3"
"""The EAGLE-3 head architecture vLLM's `eagle3` method loads for a dense target."""
ACCEPTED = (*DENSE, *MOE, HYBRID)


class ConfigError(ValueError):
    """A model that cannot be written as a config-only folder (the message names what is missing)."""


def architecture_of(model: ModelSpec) -> str:
    """The Hugging Face architecture the model's folder is written as: its `architectures`, else the
    family its kind implies (a hybrid is Qwen3.5's; a dense model Qwen3's)."""
    if model.architectures:
        name = model.architectures[0]
    else:
        name = HYBRID if model.architecture == "hybrid" else "Qwen3ForCausalLM"
    if name not in ACCEPTED:
        raise ConfigError(
            f"model={model.name}: architectures {name!r} cannot be written as a config-only folder; "
            f"accepted: {', '.join(ACCEPTED)}"
        )
    if (name == HYBRID) != (model.architecture == "hybrid"):
        raise ConfigError(
            f"model={model.name}: architecture {model.architecture} does not match architectures {name!r}"
        )
    if (name in MOE) != (model.moe is not None):
        raise ConfigError(
            f"model={model.name}: architectures {name!r} "
            + ("is a mixture of experts; the model has no moe" if name in MOE else "has no experts")
        )
    if name in MOE and (
        model.moe.shared_expert_intermediate_size or model.moe.first_k_dense_replace  # type: ignore[union-attr]
    ):
        raise ConfigError(
            f"model={model.name}: {name} has neither a shared expert nor leading dense layers"
        )
    return name


def _common(model: ModelSpec) -> dict[str, Any]:
    return {
        "vocab_size": model.vocab_size,
        "hidden_size": model.hidden_size,
        "intermediate_size": model.intermediate_size,
        "num_hidden_layers": model.num_hidden_layers,
        "num_attention_heads": model.num_attention_heads,
        "num_key_value_heads": model.num_key_value_heads,
        "head_dim": model.head_dim,
        "max_position_embeddings": model.max_position_embeddings,
        "hidden_act": "silu",
        "attention_bias": False,
        "tie_word_embeddings": model.tie_word_embeddings,
        "bos_token_id": BOS_ID,
        "eos_token_id": EOS_ID,
        "pad_token_id": BOS_ID,
    }


def config_json(model: ModelSpec) -> dict[str, Any]:
    """The model's config.json."""
    name = architecture_of(model)
    if name in MOE:
        family, moe = MOE[name], model.moe
        assert moe is not None
        return {
            "architectures": [name],
            **_common(model),
            **family,
            "num_experts": moe.num_experts,
            "num_experts_per_tok": moe.num_experts_per_tok,
            "moe_intermediate_size": moe.moe_intermediate_size,
            "rope_scaling": None,
            "torch_dtype": model.torch_dtype,
            "use_cache": True,
        }
    if name in DENSE:
        family = DENSE[name]
        return {
            "architectures": [name],
            "model_type": family["model_type"],
            **_common(model),
            "rms_norm_eps": family["rms_norm_eps"],
            "rope_theta": family["rope_theta"],
            "rope_scaling": None,
            "torch_dtype": model.torch_dtype,
            "use_cache": True,
        }
    missing = [
        f
        for f in (
            "full_attention_interval",
            "linear_num_key_heads",
            "linear_num_value_heads",
            "linear_key_head_dim",
            "linear_value_head_dim",
            "linear_conv_kernel_dim",
        )
        if getattr(model, f) is None
    ]
    if missing:
        raise ConfigError(f"model={model.name}: a hybrid model needs {', '.join(missing)}")
    interval = int(model.full_attention_interval or 4)
    text: dict[str, Any] = {
        "model_type": "qwen3_5_text",
        **_common(model),
        "rms_norm_eps": 1e-6,
        "rope_parameters": {
            "rope_theta": 10_000_000.0,
            "partial_rotary_factor": 0.25,
            "rope_type": "default",
        },
        "partial_rotary_factor": 0.25,
        "attention_dropout": 0.0,
        "linear_num_key_heads": model.linear_num_key_heads,
        "linear_num_value_heads": model.linear_num_value_heads,
        "linear_key_head_dim": model.linear_key_head_dim,
        "linear_value_head_dim": model.linear_value_head_dim,
        "linear_conv_kernel_dim": model.linear_conv_kernel_dim,
        "layer_types": [
            "full_attention" if (i + 1) % interval == 0 else "linear_attention"
            for i in range(model.num_hidden_layers)
        ],
        # SGLang lays the layers out from this field and ignores layer_types (docs/engines.md 2.5)
        "full_attention_interval": interval,
        "mamba_ssm_dtype": model.linear_state_dtype,
    }
    if model.mtp is not None:
        text["mtp_num_hidden_layers"] = model.mtp.num_hidden_layers
    # the vision tower is never built (--language-model-only); its special tokens must still be ids of
    # the vocabulary, so they take the last four
    v = model.vocab_size
    return {
        "architectures": [name],
        "model_type": "qwen3_5",
        "text_config": text,
        "vision_config": {"model_type": "qwen3_5_vision", "out_hidden_size": model.hidden_size},
        "image_token_id": v - 4,
        "video_token_id": v - 3,
        "vision_start_token_id": v - 2,
        "vision_end_token_id": v - 1,
        "tie_word_embeddings": model.tie_word_embeddings,
        "torch_dtype": model.torch_dtype,
    }


def eagle3_config(target: ModelSpec, drafter: DrafterSpec) -> dict[str, Any]:
    """The config.json of an EAGLE-3 head for `target`: one decoder layer of the target's attention
    shape over a fusion of three of its hidden states, drafting over `draft_vocab_size` tokens."""
    architecture_of(target)
    if target.architecture != "dense":
        raise ConfigError(
            f"model={target.name}: specexp writes EAGLE-3 heads for dense targets only"
        )
    draft_vocab = min(drafter.cost.draft_vocab_size or target.vocab_size, target.vocab_size)
    n = target.num_hidden_layers
    aux = sorted(
        {2, n // 2, n - 3}
    )  # vLLM's default taps (SupportsEagle3), stated so the head says what it reads
    if len(aux) < 3 or aux[0] < 0:
        raise ConfigError(
            f"model={target.name}: an EAGLE-3 head reads three distinct layers of its target "
            f"(2, n/2, n-3); {n} layers give {aux}: at least 7 are needed"
        )
    return {
        "architectures": [EAGLE3],
        "model_type": "llama",
        **_common(target),
        "num_hidden_layers": 1,
        "rms_norm_eps": 1e-6,
        "rope_theta": 1_000_000.0,
        "rope_scaling": None,
        "draft_vocab_size": draft_vocab,
        "target_hidden_size": target.hidden_size,
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": aux, "use_aux_hidden_state": True},
        "torch_dtype": target.torch_dtype,
    }


def tokenizer_files(vocab_size: int, context: int) -> dict[str, Any]:
    """tokenizer.json and tokenizer_config.json: tiny_hf's byte-level tokenizer, its vocabulary
    padded to `vocab_size` with `<wN>` tokens (ids no text encodes to, each decoding to its name)."""
    if vocab_size < tiny_hf.VOCAB_SIZE:
        raise ConfigError(
            f"vocab_size {vocab_size} is below the byte tokenizer's {tiny_hf.VOCAB_SIZE}"
        )
    tokenizer = tiny_hf.tokenizer_json()
    vocab: dict[str, int] = tokenizer["model"]["vocab"]  # type: ignore[index]
    vocab.update({f"<w{i}>": i for i in range(len(vocab), vocab_size)})
    return {
        "tokenizer.json": tokenizer,
        "tokenizer_config.json": tiny_hf.tokenizer_config_json(tiny_hf.HfShape(context=context)),
        "special_tokens_map.json": {
            "bos_token": tiny_hf.SPECIALS[0],
            "eos_token": tiny_hf.SPECIALS[2],
            "pad_token": tiny_hf.SPECIALS[0],
        },
    }


PROCESSOR = {
    "patch_size": 16,
    "temporal_patch_size": 2,
    "merge_size": 2,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "processor_class": "Qwen3VLProcessor",
}
"""The image and video processor settings Qwen3.5 publishes (those of Qwen3-VL). SGLang always builds
a Qwen3.5 model's processors, and refuses to start without these files (docs/engines.md 2.5); no
image ever reaches them."""
PROCESSOR_FILES = {
    "preprocessor_config.json": {
        **PROCESSOR,
        "size": {"longest_edge": 16777216, "shortest_edge": 65536},
        "image_processor_type": "Qwen2VLImageProcessorFast",
    },
    "video_preprocessor_config.json": {
        **PROCESSOR,
        "size": {"longest_edge": 25165824, "shortest_edge": 4096},
        "video_processor_type": "Qwen3VLVideoProcessor",
    },
}


def model_files(config: dict[str, Any]) -> dict[str, Any]:
    """Every file of a folder whose config.json is `config` (a hybrid's processors too)."""
    text = config.get("text_config", config)
    processors = PROCESSOR_FILES if HYBRID in config.get("architectures", []) else {}
    return {
        **processors,
        "config.json": config,
        "generation_config.json": {
            "bos_token_id": BOS_ID,
            "eos_token_id": EOS_ID,
            "pad_token_id": BOS_ID,
        },
        **tokenizer_files(int(text["vocab_size"]), int(text["max_position_embeddings"])),
    }


def ensure_folder(cache_dir: Path, name: str, config: dict[str, Any]) -> Path:
    """The cached folder of `config` (written atomically when missing), named after `name` and a
    digest of its files."""
    files = model_files(config)
    blob = json.dumps([FORMAT_VERSION, files], sort_keys=True).encode()
    path = Path(cache_dir) / f"{name}-config-{hashlib.sha256(blob).hexdigest()[:12]}"
    if not (path / "config.json").is_file():
        tiny_hf.write_folder(
            path,
            {
                n: (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode()
                for n, obj in files.items()
            },
        )
    return path


def model_folder(cache_dir: Path, model: ModelSpec) -> Path:
    return ensure_folder(cache_dir, model.name, config_json(model))


def eagle3_folder(cache_dir: Path, target: ModelSpec, drafter: DrafterSpec) -> Path:
    return ensure_folder(cache_dir, f"{target.name}-eagle3", eagle3_config(target, drafter))
