"""Models: the catalog, the tokenizer and its assets, one module per provider."""
