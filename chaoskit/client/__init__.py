"""The ordered-delivery client: the proposals' producer and consumer side.

Linear hashing, the KIP-253 producer and consumer, KIP-320 truncation handling,
KIP-694 awareness and an admin client, built on kafka-python's protocol layer.
"""
