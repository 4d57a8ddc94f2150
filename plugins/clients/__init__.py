"""Built-in clients: the ordered client and the stock baselines (kafka-python, librdkafka, aiokafka)."""
