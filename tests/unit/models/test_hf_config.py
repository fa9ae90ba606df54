"""specexp.models.hf_config: the config-only folders vLLM serves with --load-format dummy.
(That vLLM 0.32 on the CPU serves a dense one, and that vLLM 0.26 on an H200 served the dense, hybrid and
MTP ones, is tests/integration/test_vllm.py and benchmarks/results/gpu-h200-vllm.md.)"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from specexp.models import hf_config
from specexp.models.tiny_hf import byte_alphabet


def test_a_dense_model_is_written_with_its_shape_and_its_familys_defaults(
    make_spec: Callable[..., Any],
) -> None:
    model = make_spec("model=qwen3-8b").model
    config = hf_config.config_json(model)
    assert config["architectures"] == ["Qwen3ForCausalLM"] and config["model_type"] == "qwen3"
    assert (config["num_hidden_layers"], config["hidden_size"], config["intermediate_size"]) == (
        36,
        4096,
        12288,
    )
    assert (config["num_attention_heads"], config["num_key_value_heads"], config["head_dim"]) == (
        32,
        8,
        128,
    )
    assert config["vocab_size"] == 151936 and config["max_position_embeddings"] == 40960
    llama = hf_config.config_json(make_spec("model=llama-3.1-8b").model)
    assert llama["architectures"] == ["LlamaForCausalLM"] and llama["vocab_size"] == 128256


def test_a_hybrid_model_is_qwen35s_layout_with_its_mtp_layer(make_spec: Callable[..., Any]) -> None:
    config = hf_config.config_json(make_spec("model=qwen3.8-27b").model)
    assert (
        config["architectures"] == ["Qwen3_5ForConditionalGeneration"]
        and config["model_type"] == "qwen3_5"
    )
    text = config["text_config"]
    assert text["model_type"] == "qwen3_5_text" and text["mtp_num_hidden_layers"] == 1
    kinds = text["layer_types"]
    assert len(kinds) == 64 and kinds.count("full_attention") == 16
    assert all(
        kind == ("full_attention" if (i + 1) % 4 == 0 else "linear_attention")
        for i, kind in enumerate(kinds)
    )
    assert (text["linear_num_key_heads"], text["linear_num_value_heads"]) == (16, 48)
    assert text["mamba_ssm_dtype"] == "float32"
    # the stub vision tower's special tokens are ids of the model's vocabulary
    assert (
        max(
            config[k]
            for k in (
                "image_token_id",
                "video_token_id",
                "vision_start_token_id",
                "vision_end_token_id",
            )
        )
        < text["vocab_size"]
    )
    assert (
        "mtp_num_hidden_layers"
        not in hf_config.config_json(make_spec("model=qwen3.8-27b", "model.mtp=null").model)[
            "text_config"
        ]
    )


def test_the_tokenizer_covers_every_id_the_model_can_emit(make_spec: Callable[..., Any]) -> None:
    files = hf_config.model_files(hf_config.config_json(make_spec("model=qwen3-8b").model))
    vocab = files["tokenizer.json"]["model"]["vocab"]
    assert sorted(vocab.values()) == list(range(151936))  # one token per id, no gap, no duplicate
    assert [vocab[c] for c in byte_alphabet()] == list(range(256))  # text is encoded byte by byte
    assert vocab["<w151935>"] == 151935
    assert files["tokenizer_config.json"]["model_max_length"] == 40960


def test_an_eagle3_head_reads_three_distinct_target_layers(make_spec: Callable[..., Any]) -> None:
    spec = make_spec("model=qwen3-8b", "drafter=eagle3")
    head = hf_config.eagle3_config(spec.model, spec.drafter)
    assert head["architectures"] == ["LlamaForCausalLMEagle3"] and head["num_hidden_layers"] == 1
    assert head["eagle_config"]["eagle_aux_hidden_state_layer_ids"] == [2, 18, 33]
    assert head["draft_vocab_size"] == 32000 and head["target_hidden_size"] == 4096
    shallow = make_spec("model=qwen3-8b", "model.num_hidden_layers=6", "drafter=eagle3")
    with pytest.raises(hf_config.ConfigError, match="three distinct layers"):
        hf_config.eagle3_config(shallow.model, shallow.drafter)
    hybrid = make_spec("model=qwen3.8-27b", "drafter=eagle3")
    with pytest.raises(hf_config.ConfigError, match="dense targets only"):
        hf_config.eagle3_config(hybrid.model, hybrid.drafter)


def test_an_architecture_it_cannot_write_is_refused_with_the_accepted_ones(
    make_spec: Callable[..., Any],
) -> None:
    model = make_spec("model=qwen3-8b", "model.architectures=[MixtralForCausalLM]").model
    with pytest.raises(
        hf_config.ConfigError,
        match="MixtralForCausalLM.*accepted: Qwen3ForCausalLM, LlamaForCausalLM",
    ):
        hf_config.config_json(model)


def test_a_folder_is_written_once_and_named_by_its_content(
    make_spec: Callable[..., Any], tmp_path: Path
) -> None:
    model = make_spec("model=qwen3-8b").model
    first = hf_config.model_folder(tmp_path, model)
    assert sorted(p.name for p in first.iterdir()) == [
        "config.json",
        "generation_config.json",
        "special_tokens_map.json",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    assert json.loads((first / "config.json").read_text())["hidden_size"] == 4096
    stamp = (first / "config.json").stat().st_mtime_ns
    assert (
        hf_config.model_folder(tmp_path, model) == first
        and (first / "config.json").stat().st_mtime_ns == stamp
    )
    other = hf_config.model_folder(
        tmp_path, make_spec("model=qwen3-8b", "model.num_hidden_layers=2").model
    )
    assert other != first and other.name.startswith("qwen3-8b-config-")
