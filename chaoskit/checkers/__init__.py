"""Checkers: the protocol, composition, the Spark session, the checks and linearizability."""
