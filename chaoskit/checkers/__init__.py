"""Checkers: every check a Checker (chaoskit.roles) in one name -> checker map, composed into a
Verdict (compose.py); the catalog of the Kafka checks (catalog.py) and their two engines behind
one protocol (engine.py: local/ in this process, spark/ on Spark); linearizability (linear/)."""
