"""Layer 5, the project: what crosses function boundaries (`callgraph`)."""
