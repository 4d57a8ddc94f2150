"""Built-in workloads: seeded generators of client operations."""
