"""Clusters under test: ClusterSpec, Node, the link topology and the backends.

The local backend runs ZooKeeper, controllers and brokers as child processes;
the docker backend runs them as containers. The reaper removes what a dead
runner left behind.
"""
