"""needle-service: needle-in-a-haystack long-context tests as an event-driven service."""

__version__ = "0.1.0"
