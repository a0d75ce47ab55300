"""The run request: its options, validation, the grid they expand to, and who asked."""
