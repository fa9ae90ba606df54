"""Ollama: its driver (`driver`) and the models it imports from GGUF files (`models`)."""
