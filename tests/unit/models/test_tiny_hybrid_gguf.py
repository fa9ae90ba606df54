"""specexp's tiny hybrid GGUF: llama.cpp's qwen35 layout, from a hybrid ModelSpec, reproducibly.

That llama-server loads it and resumes it from a checkpoint is tests/integration/test_llamacpp.py's.
"""

from __future__ import annotations

from pathlib import Path

import gguf
import pytest

from specexp.models import tiny_hybrid_gguf as th
from specexp.run.compose import load_option
from specexp.spec.experiment import ModelSpec


def model(name: str = "tiny-hybrid") -> ModelSpec:
    return load_option(ModelSpec, "model", name, "model")


def test_the_shape_is_the_model_files(tmp_path: Path) -> None:
    shape = th.TinyHybridShape.of(model())
    path = th.write_model(tmp_path / "m.gguf", shape=shape)
    reader = gguf.GGUFReader(path)
    arch = reader.fields["general.architecture"]
    assert bytes(arch.parts[arch.data[0]]).decode() == "qwen35"
    names = {t.name for t in reader.tensors}
    # layer 3 of 4 is full attention, the others Gated DeltaNet
    assert "blk.3.attn_q.weight" in names and "blk.3.ssm_a" not in names
    assert {"blk.0.ssm_conv1d.weight", "blk.0.attn_qkv.weight", "blk.2.ssm_out.weight"} <= names
    shapes = {t.name: tuple(int(d) for d in t.shape) for t in reader.tensors}  # llama.cpp's order
    assert shapes["blk.0.attn_qkv.weight"] == (128, 2 * 2 * 32 + 4 * 32)
    assert shapes["blk.3.attn_q.weight"] == (128, 2 * 4 * 32)  # the query and its output gate


def test_same_arguments_give_the_same_cached_file(tmp_path: Path) -> None:
    a = th.ensure_model(tmp_path)
    b = th.ensure_model(tmp_path)
    other = th.ensure_model(tmp_path, seed=1)
    assert (
        a == b
        and a != other
        and a.read_bytes() == th.write_model(tmp_path / "again.gguf").read_bytes()
    )


def test_a_model_whose_linear_keys_and_values_differ_in_width_is_refused() -> None:
    wide = model().model_copy(update={"linear_value_head_dim": 64})
    with pytest.raises(ValueError, match="linear_key_head_dim 32.*linear_value_head_dim 64"):
        th.TinyHybridShape.of(wide)
