"""SGLang: its driver (`driver`)."""
