"""The NIAH logic: no Google client, no cloud adapter; small interfaces to the outside."""
