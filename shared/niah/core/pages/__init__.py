"""Pages: the Jinja2 templates and what fills them (a run's report, the runs index)."""
