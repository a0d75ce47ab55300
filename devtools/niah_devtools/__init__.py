"""Developer tooling that never ships: the Vertex stand-in, the local stack, checks."""
