"""The service's jobs: dispatch, the cell worker, run completion, reports, the sweep."""
