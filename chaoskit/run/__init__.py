"""The run: a chaos test as data (chaostest.py), the live run its parts share (live.py), the runner
that plays it phase by phase (runner.py) with its worker processes (workers.py), the fault mixes
suites and the demo share (mixes.py), and `chaoskit run`, which replays a test.json (cli.py).

Everything a run needs is here; chaoskit/suite/ (the pytest side), chaoskit/demo.py and
`chaoskit run` are ways to start one.
"""
