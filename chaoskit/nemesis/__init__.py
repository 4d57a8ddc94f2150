"""The fault protocol and the seeded scheduler.

The fault packs themselves live in plugins/faults and register through the
`chaoskit` entry-point group.
"""
