"""The simulator behind the runtime seam: its driver (`driver`)."""
