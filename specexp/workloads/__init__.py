"""Workloads: which requests a job sends, in which windows, and what each window measures."""
