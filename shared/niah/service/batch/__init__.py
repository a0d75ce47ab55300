"""Runs answered by Vertex AI batch prediction: submit, wait, read the output, settle."""
