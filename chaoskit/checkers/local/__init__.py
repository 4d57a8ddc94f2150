"""The local engine: the Kafka checks in this process (the reference the Spark engine agrees with)."""
