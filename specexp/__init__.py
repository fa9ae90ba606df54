"""specexp: declarative LLM-serving experiments and honest reports."""

__version__ = "0.1.0"
