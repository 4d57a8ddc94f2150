"""chaoskit's built-in plugins (import name `chaoskit_plugins`).

They register through the same `chaoskit` entry-point group a third-party
plugin uses: faults, workloads, clients and checks.
"""
