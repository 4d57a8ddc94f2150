"""Brokers other than chaoskit's own, each a chaoskit.cluster.brokers.BrokerKind."""
