"""The service's jobs: dispatch, the cell worker, run completion, reports, the sweep."""

# The task registry: every run request names a task, whose options it validates with the
# task's model (niah.core.request.task_options), wherever the service reads a request.
import niah.tasks  # noqa: F401
