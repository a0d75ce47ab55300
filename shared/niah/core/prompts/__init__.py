"""Prompts: haystacks, needles, the one prompt builder and every prompt's wording, to the token."""
