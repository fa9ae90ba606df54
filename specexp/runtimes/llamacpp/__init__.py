"""llama.cpp's `llama-server`: its driver (`driver`)."""
