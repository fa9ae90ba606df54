"""vLLM: its driver (`driver`), what its server says about itself (`facts`), its CPU install
(`install`) and its tokenizer endpoint (`tokens`)."""
