"""A cell's life in the worker: its run view, prompt, answer, scoring and records."""
