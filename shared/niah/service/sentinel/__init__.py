"""Sentinels: a scheduled run fired, and weighed against its baseline when reported."""
