"""Histories of operations: the op schema, the recorder, loaders and the synthetic generator.

docs/history.md is the schema's reference.
"""
from chaoskit.history.recorder import Recorder

__all__ = ["Recorder"]
