"""An OpenAI-compatible endpoint already running: its driver (`driver`)."""
