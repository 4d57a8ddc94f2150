"""The Spark engine: the Kafka checks as Spark jobs over the Parquet history, and the session they run on."""
