"""Histories of operations: the op schema, the recorder, loaders and Parquet.

docs/history.md is the schema's reference.
"""
