"""Built-in fault packs: partitions, process faults, zombies, unclean elections, stale metadata, link toxics."""
