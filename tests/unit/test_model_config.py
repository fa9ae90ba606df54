"""A model spec from a Hugging Face config.json (`model=hf model.config_json=PATH` or
`model.hf_id=ORG/NAME`): the config.json files specexp writes for every conf/model shape read
back to the same fields, hybrid layouts and MTP layers included, and what a config lacks refused
in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specexp.models.hf_config import ConfigError, config_json
from specexp.roofline.shape import model_shape
from specexp.run.compose import build_spec
from specexp.spec import paths
from specexp.spec.errors import SpecError
from specexp.spec.experiment import ModelSpec
from specexp.spec.model_config import model_fields
from specexp.spec.options import load_option

SHAPE = (
    "architecture",
    "num_hidden_layers",
    "hidden_size",
    "intermediate_size",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "vocab_size",
    "max_position_embeddings",
    "tie_word_embeddings",
    "full_attention_interval",
    "linear_num_key_heads",
    "linear_num_value_heads",
    "linear_key_head_dim",
    "linear_value_head_dim",
    "linear_conv_kernel_dim",
)


def _shipped() -> list[ModelSpec]:
    models = []
    for name in paths.options("model"):
        if name == "hf":
            continue
        model = load_option(ModelSpec, "model", name, "model")
        try:
            config_json(model)
        except ConfigError:
            continue  # an architecture specexp writes no config-only folder for
        models.append(model)
    return models


@pytest.mark.parametrize("model", _shipped(), ids=lambda m: m.name)
def test_the_config_json_specexp_writes_reads_back_to_the_same_shape(
    model: ModelSpec, tmp_path: Path
) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config_json(model)))
    spec = build_spec(["model=hf", f"model.config_json={path}"])
    for field in SHAPE:
        assert getattr(spec.model, field) == getattr(model, field), field
    assert (spec.model.mtp is None) == (model.mtp is None)
    if model.mtp is not None:
        assert spec.model.mtp.num_hidden_layers == model.mtp.num_hidden_layers
    assert spec.model.moe == model.moe


def test_a_mixture_of_experts_is_among_the_shapes_read_back() -> None:
    assert any(m.moe is not None for m in _shipped())


MIXTRAL = {
    "architectures": ["MixtralForCausalLM"],
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 32768,
    "vocab_size": 32000,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
}
"""Mixtral-8x7B-v0.1's config.json (its shape fields): the expert width is `intermediate_size`."""
GLM_AIR = {
    "architectures": ["Glm4MoeForCausalLM"],
    "hidden_size": 4096,
    "intermediate_size": 10944,
    "moe_intermediate_size": 1408,
    "num_attention_heads": 96,
    "num_hidden_layers": 46,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "max_position_embeddings": 131072,
    "vocab_size": 151552,
    "n_routed_experts": 128,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 1,
    "num_nextn_predict_layers": 1,
}
"""GLM-4.5-Air's config.json (its shape fields): one shared expert, one leading dense layer, an
MTP layer."""


def test_public_mixtures_of_experts_are_read_with_their_own_spellings() -> None:
    mixtral = model_fields(MIXTRAL, "config.json")["moe"]
    assert mixtral == {
        "num_experts": 8,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 14336,
        "shared_expert_intermediate_size": 0,
        "first_k_dense_replace": 0,
    }
    glm = model_fields(GLM_AIR, "config.json")
    assert glm["moe"] == {
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "moe_intermediate_size": 1408,
        "shared_expert_intermediate_size": 1408,
        "first_k_dense_replace": 1,
    }
    assert glm["mtp"] == {"num_hidden_layers": 1}


def test_a_mixture_counts_every_expert_held_and_k_of_them_per_token(tmp_path: Path) -> None:
    """Mixtral-8x7B's published counts: 46.7 B parameters, 12.9 B of them per token."""
    path = tmp_path / "Mixtral-8x7B" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(MIXTRAL))
    shape = model_shape(build_spec(["model=hf", f"model.config_json={path}"]).model)
    held = shape.total_params + shape.input_embedding_params
    per_token = held - shape.routed_expert_params * (1 - shape.active_share)
    assert held / 1e9 == pytest.approx(46.7, abs=0.1)
    assert per_token / 1e9 == pytest.approx(12.9, abs=0.1)


def test_a_public_config_with_its_own_spelling_is_read(tmp_path: Path) -> None:
    """Llama-3.1-8B-Instruct's config.json as published: no head_dim key in older files, `rope_scaling`
    of type llama3 (not YaRN), a quantization_config named but not applied."""
    config = {
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 131072,
        "vocab_size": 128256,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "rope_scaling": {"factor": 8.0, "rope_type": "llama3"},
        "quantization_config": {"quant_method": "fp8"},
    }
    fields = model_fields(config, "config.json")
    assert (
        fields["head_dim"] == 128
        and fields["architecture"] == "dense"
        and "yarn_factor" not in fields
    )
    path = tmp_path / "Llama-3.1-8B" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(config))
    spec = build_spec(
        ["model=hf", f"model.config_json={path}", "model.max_position_embeddings=32768"]
    )
    assert (
        spec.model.name == "llama-3.1-8b" and spec.model.max_position_embeddings == 32768
    )  # an override wins


def test_yarn_and_deepseek_style_mtp_are_read() -> None:
    config = {
        "hidden_size": 2048,
        "intermediate_size": 6144,
        "num_attention_heads": 16,
        "num_hidden_layers": 28,
        "vocab_size": 151936,
        "max_position_embeddings": 32768,
        "num_nextn_predict_layers": 1,
        "rope_scaling": {"type": "yarn", "factor": 4.0},
    }
    fields = model_fields(config, "config.json")
    assert fields["yarn_factor"] == 4.0 and fields["mtp"] == {"num_hidden_layers": 1}
    assert fields["num_key_value_heads"] == 16 and fields["head_dim"] == 128


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"hidden_size": 1}, "config.json has no num_hidden_layers"),
        (
            {
                "num_hidden_layers": 2,
                "hidden_size": 8,
                "intermediate_size": 8,
                "num_attention_heads": 2,
                "vocab_size": 8,
                "max_position_embeddings": 8,
                "num_experts": 64,
            },
            "mixture of 64 experts without num_experts_per_tok",
        ),
        (
            {**MIXTRAL, "decoder_sparse_step": 2},
            "decoder_sparse_step > 1",
        ),
        (
            {**MIXTRAL, "kv_lora_rank": 512},
            "multi-head latent attention",
        ),
        (
            {
                "num_hidden_layers": 3,
                "hidden_size": 8,
                "intermediate_size": 8,
                "num_attention_heads": 2,
                "vocab_size": 8,
                "max_position_embeddings": 8,
                "layer_types": ["linear_attention", "full_attention", "full_attention"],
            },
            "layer pattern",
        ),
    ],
)
def test_what_a_config_lacks_is_one_line_naming_it(config: dict, message: str) -> None:
    with pytest.raises(SpecError) as err:
        model_fields(config, "my/config.json")
    assert message in err.value.line() and "my/config.json" in err.value.line()


def test_an_hf_id_is_read_from_the_local_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    snapshot = tmp_path / "hub" / "models--acme--tiny-8b" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    model = load_option(ModelSpec, "model", "qwen3-8b", "model")
    (snapshot / "config.json").write_text(json.dumps(config_json(model)))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    spec = build_spec(["model=hf", "model.hf_id=acme/tiny-8b"])
    assert spec.model.name == "tiny-8b" and spec.model.hidden_size == model.hidden_size
    assert spec.model.hf_id == "acme/tiny-8b"


def test_model_hf_without_a_source_says_what_to_give() -> None:
    with pytest.raises(SpecError) as err:
        build_spec(["model=hf"])
    assert (
        "model.config_json=PATH" in err.value.line() and "model.hf_id=ORG/NAME" in err.value.line()
    )


def test_models_read_from_two_files_in_one_folder_are_two_models(tmp_path: Path) -> None:
    """Records name a config.json model by the file (its `_name_or_path`, its folder when it is a
    config.json, else its stem), never `hf`: two files are never paired as one model."""
    config = config_json(load_option(ModelSpec, "model", "qwen3-8b", "model"))
    (tmp_path / "mine-8b.json").write_text(json.dumps(config))
    (tmp_path / "theirs.json").write_text(json.dumps({**config, "_name_or_path": "Org/Theirs-8B"}))
    names = {
        build_spec(["model=hf", f"model.config_json={tmp_path / f}"]).model.name
        for f in ("mine-8b.json", "theirs.json")
    }
    assert names == {"mine-8b", "theirs-8b"}
