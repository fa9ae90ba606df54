"""specexp.models.hf_from_gguf: a qwen2 GGUF made into a Hugging Face folder (BF16 safetensors,
config.json, tokenizer). A tiny qwen2 GGUF is written here with quantized tensors of the types the
packaged pair holds (Q4_K, Q6_K, Q5_0, Q8_0, F32); that vLLM serves the real pair's folders is
reports/cpu_vllm_pair/."""

from __future__ import annotations

import json
import os
import re
import struct
from pathlib import Path

import gguf
import numpy as np
import pytest

from specexp.models import hf_from_gguf as h
from specexp.models.tiny_gguf import add_transformer_metadata, write_tiny_model
from specexp.models.tiny_hf import byte_alphabet

Q = gguf.GGMLQuantizationType
HIDDEN, FF, HEADS, KV_HEADS, LAYERS = 256, 256, 4, 2, 2
HEAD_DIM = HIDDEN // HEADS
MERGES = ["Ġ t", "h e", "Ġt he", "i n", "Ġ in", "d e", "de f"]
SPECIALS = [
    ("<|endoftext|>", gguf.TokenType.CONTROL),
    ("<|im_start|>", gguf.TokenType.CONTROL),
    ("<|im_end|>", gguf.TokenType.CONTROL),
    ("<tool_call>", gguf.TokenType.USER_DEFINED),
    ("[PAD1]", gguf.TokenType.UNUSED),
]
TOKENS = [*byte_alphabet(), *(m.replace(" ", "") for m in MERGES), *(t for t, _ in SPECIALS)]
EOT, IM_END = TOKENS.index("<|endoftext|>"), TOKENS.index("<|im_end|>")


def _raw_blocks(rng: np.random.Generator, rows: int, qtype: Q, scale_at: slice) -> np.ndarray:
    """Random K-quant blocks (gguf-py cannot quantize to them) with a sane fp16 scale."""
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    blocks = rng.integers(0, 256, size=(rows, HIDDEN // block, size), dtype=np.uint8)
    blocks[:, :, scale_at] = np.frombuffer(np.float16(0.01).tobytes() * 2, np.uint8)[
        : scale_at.stop - scale_at.start
    ]
    return blocks.reshape(rows, -1)


def _tensors(rng: np.random.Generator) -> list[tuple[str, np.ndarray, Q | None]]:
    """(name, array, raw type) in llama.cpp's qwen2 names; quantized ones as their bytes."""

    def normal(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)

    def quant(array: np.ndarray, qtype: Q) -> tuple[np.ndarray, Q]:
        return gguf.quantize(array, qtype), qtype

    vocab, q_rows, kv_rows = len(TOKENS), HEADS * HEAD_DIM, KV_HEADS * HEAD_DIM
    out: list[tuple[str, np.ndarray, Q | None]] = [
        ("token_embd.weight", *quant(normal(vocab, HIDDEN), Q.Q8_0)),
        ("output_norm.weight", np.ones(HIDDEN, np.float32), None),
        ("output.weight", _raw_blocks(rng, vocab, Q.Q6_K, slice(208, 210)), Q.Q6_K),
    ]
    for i in range(LAYERS):
        p = f"blk.{i}."
        out += [
            (p + "attn_norm.weight", 1 + normal(HIDDEN), None),
            (p + "attn_q.weight", *quant(normal(q_rows, HIDDEN), Q.Q5_0)),
            (p + "attn_q.bias", normal(q_rows), None),
            (p + "attn_k.weight", *quant(normal(kv_rows, HIDDEN), Q.Q5_0)),
            (p + "attn_k.bias", normal(kv_rows), None),
            (p + "attn_v.weight", *quant(normal(kv_rows, HIDDEN), Q.Q8_0)),
            (p + "attn_v.bias", normal(kv_rows), None),
            (p + "attn_output.weight", _raw_blocks(rng, HIDDEN, Q.Q4_K, slice(0, 4)), Q.Q4_K),
            (p + "ffn_norm.weight", 1 + normal(HIDDEN), None),
            (p + "ffn_gate.weight", _raw_blocks(rng, FF, Q.Q4_K, slice(0, 4)), Q.Q4_K),
            (p + "ffn_up.weight", *quant(normal(FF, HIDDEN), Q.Q8_0)),
            (p + "ffn_down.weight", normal(HIDDEN, FF), None),
        ]
    return out


def gpt2_vocab_writer(
    path: Path,
    arch: str,
    pre: str,
    shape: tuple[int, int, int, int, int],
    file_type: gguf.LlamaFileType,
    rope_theta: float,
    rms_eps: float,
) -> gguf.GGUFWriter:
    """A GGUF writer of `arch` with a transformer's metadata (hidden, ff, heads, KV heads, layers)
    and a byte-level BPE vocabulary of pre-tokenizer `pre` (its tokens and merges to be added)."""
    hidden, ff, heads, kv_heads, layers = shape
    writer = gguf.GGUFWriter(str(path), arch)
    add_transformer_metadata(
        writer,
        name=path.stem,
        file_type=int(file_type),
        context=4096,
        embd=hidden,
        layers=layers,
        ff=ff,
        heads=heads,
        kv_heads=kv_heads,
        rope_dims=hidden // heads,
        rope_theta=rope_theta,
        rms_eps=rms_eps,
    )
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre)
    return writer


def write_qwen2_gguf(path: Path, seed: int = 0) -> Path:
    writer = gpt2_vocab_writer(
        path,
        "qwen2",
        "qwen2",
        (HIDDEN, FF, HEADS, KV_HEADS, LAYERS),
        gguf.LlamaFileType.MOSTLY_Q4_K_M,
        rope_theta=1_000_000.0,
        rms_eps=1e-6,
    )
    writer.add_token_list(TOKENS)
    types = [gguf.TokenType.NORMAL] * (len(TOKENS) - len(SPECIALS)) + [t for _, t in SPECIALS]
    writer.add_token_types([int(t) for t in types])
    writer.add_token_merges(MERGES)
    writer.add_bos_token_id(EOT)
    writer.add_eos_token_id(IM_END)
    writer.add_pad_token_id(EOT)
    writer.add_add_bos_token(False)
    writer.add_chat_template("{% for m in messages %}<|im_start|>{{ m['content'] }}{% endfor %}")
    for name, array, raw in _tensors(np.random.default_rng(seed)):
        writer.add_tensor(name, array, raw_dtype=raw)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the GGUF, its folder)."""
    tmp = tmp_path_factory.mktemp("hf-from-gguf")
    source = write_qwen2_gguf(tmp / "tiny-qwen2.gguf")
    return source, h.write_folder(source, tmp / "hf", h.file_sha256(source))


def read_safetensors(path: Path) -> dict[str, tuple[str, list[int], bytes]]:
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    header.pop("__metadata__")
    body = data[8 + size :]
    return {
        n: (t["dtype"], t["shape"], body[t["data_offsets"][0] : t["data_offsets"][1]])
        for n, t in header.items()
    }


def bf16_to_f32(blob: bytes) -> np.ndarray:
    return (np.frombuffer(blob, "<u2").astype(np.uint32) << 16).view(np.float32)


def test_every_tensor_has_qwen2s_hugging_face_name_and_shape(made: tuple[Path, Path]) -> None:
    source, folder = made
    reader = gguf.GGUFReader(str(source))
    written = read_safetensors(folder / "model.safetensors")
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN2, LAYERS)
    assert len(written) == len(reader.tensors) == 3 + 12 * LAYERS
    for t in reader.tensors:
        dtype, shape, _ = written[h.hf_name(t.name)]
        assert dtype == "BF16"
        assert shape == list(reversed(t.shape.tolist()))  # GGUF lists the fastest dimension first
        hf, suffix = h.hf_name(t.name).rsplit(".", 1)
        assert f"{names.get_name(hf)}.{suffix}" == t.name  # gguf-py's own map agrees
    assert written["model.layers.1.self_attn.q_proj.weight"][1] == [HEADS * HEAD_DIM, HIDDEN]
    assert written["lm_head.weight"][1] == [len(TOKENS), HIDDEN]


def test_values_are_the_ggufs_dequantized_rounded_to_bf16(made: tuple[Path, Path]) -> None:
    """Q/K are not permuted back: llama.cpp writes qwen2's unpermuted (convert_hf_to_gguf.py)."""
    source, folder = made
    written = read_safetensors(folder / "model.safetensors")
    types = set()
    for t in gguf.GGUFReader(str(source)).tensors:
        types.add(t.tensor_type)
        want = gguf.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(-1)
        got = bf16_to_f32(written[h.hf_name(t.name)][2])
        assert np.array_equal(got, bf16_to_f32(h.bf16_bytes(want)))
        assert np.allclose(got, want, rtol=2**-8, atol=0), t.name
    assert {Q.Q4_K, Q.Q6_K, Q.Q5_0, Q.Q8_0, Q.F32} <= types


def test_config_is_the_ggufs_metadata(made: tuple[Path, Path]) -> None:
    config = json.loads((made[1] / "config.json").read_text())
    assert config["architectures"] == ["Qwen2ForCausalLM"] and config["model_type"] == "qwen2"
    assert (config["hidden_size"], config["intermediate_size"]) == (HIDDEN, FF)
    assert (config["num_attention_heads"], config["num_key_value_heads"]) == (HEADS, KV_HEADS)
    assert config["num_hidden_layers"] == LAYERS and config["vocab_size"] == len(TOKENS)
    assert config["rope_theta"] == 1_000_000.0 and config["rms_norm_eps"] == 1e-6
    assert config["max_position_embeddings"] == 4096 and config["tie_word_embeddings"] is False
    assert (config["bos_token_id"], config["eos_token_id"]) == (EOT, IM_END)
    generation = json.loads((made[1] / "generation_config.json").read_text())
    assert generation == {"bos_token_id": EOT, "eos_token_id": IM_END, "pad_token_id": EOT}
    stamp = json.loads((made[1] / h.STAMP).read_text())
    assert stamp["file_type"] == "Q4_K_M" and stamp["stored_as"] == "BF16"
    assert stamp["tensor_types"]["Q4_K"] == 2 * LAYERS


def bpe_encode(tokenizer: dict, text: str) -> list[int]:
    """Byte-level BPE by merge rank (enough for one pre-token of these merges)."""
    vocab, ranks = tokenizer["model"]["vocab"], {}
    for i, merge in enumerate(tokenizer["model"]["merges"]):
        ranks[tuple(merge.split(" "))] = i
    alphabet = byte_alphabet()
    ids: list[int] = []
    for word in re.findall(r" ?\S+|\s+", text):
        parts = [alphabet[b] for b in word.encode()]
        while len(parts) > 1:
            pairs = [(ranks.get(p, 1 << 30), i) for i, p in enumerate(zip(parts, parts[1:]))]
            rank, i = min(pairs)
            if rank == 1 << 30:
                break
            parts[i : i + 2] = [parts[i] + parts[i + 1]]
        ids += [vocab[p] for p in parts]
    return ids


def bpe_decode(tokenizer: dict, ids: list[int]) -> str:
    by_id = {i: t for t, i in tokenizer["model"]["vocab"].items()}
    byte_of = {c: b for b, c in enumerate(byte_alphabet())}
    return bytes(byte_of[c] for i in ids for c in by_id[i]).decode()


def test_tokenizer_keeps_the_ggufs_ids_merges_and_specials(made: tuple[Path, Path]) -> None:
    tokenizer = json.loads((made[1] / "tokenizer.json").read_text())
    model = tokenizer["model"]
    assert model["type"] == "BPE" and model["merges"] == MERGES
    assert model["vocab"] == {t: i for i, t in enumerate(TOKENS)}
    added = {a["content"]: (a["id"], a["special"]) for a in tokenizer["added_tokens"]}
    assert added == {
        "<|endoftext|>": (EOT, True),
        "<|im_start|>": (EOT + 1, True),
        "<|im_end|>": (IM_END, True),
        "<tool_call>": (IM_END + 1, False),
    }  # an unused [PAD] token is in the vocabulary only
    split = tokenizer["pre_tokenizer"]["pretokenizers"][0]
    assert split["pattern"]["Regex"] == h.QWEN2_SPLIT and tokenizer["normalizer"]["type"] == "NFC"
    text = "def the thin\tindex ünï"
    ids = bpe_encode(tokenizer, text)
    assert TOKENS.index("Ġthe") in ids and TOKENS.index("def") in ids
    assert bpe_decode(tokenizer, ids) == text
    config = json.loads((made[1] / "tokenizer_config.json").read_text())
    assert (config["eos_token"], config["pad_token"]) == ("<|im_end|>", "<|endoftext|>")
    assert config["add_bos_token"] is False and "<|im_start|>" in config["chat_template"]


def test_tokenizer_round_trips_through_the_tokenizers_library(made: tuple[Path, Path]) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer.from_file(str(made[1] / "tokenizer.json"))
    text = "def the thin\tindex ünï<|im_end|>"
    ids = tok.encode(text).ids
    assert ids[-1] == IM_END and tok.decode(ids, skip_special_tokens=False) == text


def test_the_folder_is_made_once_and_again_when_stale(tmp_path: Path) -> None:
    source = write_qwen2_gguf(tmp_path / "m.gguf")
    said: list[str] = []
    folder = h.ensure_folder(source, root=tmp_path, say=said.append)
    sha = h.file_sha256(source)
    assert folder == tmp_path / "models" / "hf" / sha[:16] and len(said) == 1
    before = (folder / "model.safetensors").stat().st_mtime_ns
    assert h.ensure_folder(source, sha, root=tmp_path, say=said.append) == folder
    assert len(said) == 1 and (folder / "model.safetensors").stat().st_mtime_ns == before
    with (folder / "model.safetensors").open("r+b") as f:
        f.truncate(100)  # a file cut short no longer matches its stamp
    assert h.stamp_of(folder) is None
    h.ensure_folder(source, sha, root=tmp_path, say=said.append)
    assert len(said) == 2 and h.stamp_of(folder) is not None
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no temp folder


def test_a_gguf_it_cannot_convert_is_one_line_naming_it(tmp_path: Path) -> None:
    llama = write_tiny_model(tmp_path / "tiny-llama.gguf")  # llama, but a SentencePiece vocabulary
    with pytest.raises(h.GgufConversionError, match="tiny-llama.gguf: tokenizer 'llama'"):
        h.write_folder(llama, tmp_path / "out", "0" * 64)
    other = gguf.GGUFWriter(str(tmp_path / "mamba.gguf"), "mamba")
    other.write_header_to_file()
    other.write_kv_data_to_file()
    other.close()
    with pytest.raises(h.GgufConversionError) as info:
        h.write_folder(tmp_path / "mamba.gguf", tmp_path / "out", "0" * 64)
    assert "mamba.gguf: architecture 'mamba'" in str(info.value)
    assert "qwen2 and llama" in str(info.value) and "\n" not in str(info.value)
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf")
    with pytest.raises(h.GgufConversionError) as info:
        h.write_folder(junk, tmp_path / "out", "0" * 64)
    assert "junk.gguf: not a readable GGUF" in str(info.value) and "\n" not in str(info.value)
    assert not (tmp_path / "out").exists()


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_qwen2_gguf(tmp_path / "m.gguf")
    assert h.main([str(source), str(tmp_path / "out")]) == 0
    assert Path(capsys.readouterr().out.strip()) == tmp_path / "out"
    assert h.main([str(tmp_path / "missing.gguf"), str(tmp_path / "x")]) == 1
    assert "missing.gguf" in capsys.readouterr().err
    assert os.access(tmp_path / "out", os.R_OK)
