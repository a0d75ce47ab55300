"""The functions' routes: what each entry point decodes and hands to a service job."""
