"""A GGUF's hyper-parameters in Hugging Face config.json field names.

llama.cpp writes a checkpoint's shape into the GGUF metadata as `<arch>.block_count`,
`<arch>.embedding_length` and so on (gguf-py's `Keys.LLM`); this reads them back under the names
`conf/model/` uses, so a model file can be checked against the weights it names
(`tests/integration/test_real_models.py`) and a GGUF can stand for a config.json.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gguf

HF_OF_GGUF = {
    "block_count": "num_hidden_layers",
    "embedding_length": "hidden_size",
    "feed_forward_length": "intermediate_size",
    "attention.head_count": "num_attention_heads",
    "attention.head_count_kv": "num_key_value_heads",
    "context_length": "max_position_embeddings",
}
"""`<arch>.<key>` -> config.json field."""


def _value(reader: gguf.GGUFReader, key: str) -> Any:
    field = reader.fields.get(key)
    if field is None:
        return None
    return field.contents()


def hf_fields(path: Path) -> dict[str, Any]:
    """The HF-named shape of the GGUF at `path`, plus `general.name`, the architecture and the
    vocabulary (token count, BOS/EOS ids, pre-tokenizer) a draft must share with its target."""
    reader = gguf.GGUFReader(str(path))
    arch = _value(reader, "general.architecture")
    fields: dict[str, Any] = {hf: _value(reader, f"{arch}.{key}") for key, hf in HF_OF_GGUF.items()}
    heads = fields["num_attention_heads"]
    key_length = _value(reader, f"{arch}.attention.key_length")
    fields["head_dim"] = key_length or (fields["hidden_size"] // heads if heads else None)
    tokens = _value(reader, "tokenizer.ggml.tokens")
    fields["vocab_size"] = _value(reader, f"{arch}.vocab_size") or (
        len(tokens) if tokens is not None else None
    )
    fields["tie_word_embeddings"] = not any(t.name == "output.weight" for t in reader.tensors)
    fields["general_name"] = _value(reader, "general.name")
    fields["gguf_architecture"] = arch
    fields["file_type"] = _value(reader, "general.file_type")
    fields["vocabulary"] = {
        "tokens": len(tokens) if tokens is not None else None,
        "bos_token_id": _value(reader, "tokenizer.ggml.bos_token_id"),
        "eos_token_id": _value(reader, "tokenizer.ggml.eos_token_id"),
        "pre": _value(reader, "tokenizer.ggml.pre"),
    }
    return fields
