"""Model files that specexp generates for itself (tiny GGUF models for CPU tests)."""
