"""A run's life on the dispatcher's side.

Admission, dispatch, cancel, completion, the sweep and certify rounds.
"""
