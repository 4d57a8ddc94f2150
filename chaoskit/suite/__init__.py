"""The pytest side: the plugin (options, markers, fixtures; the `pytest11` entry point), the
`chaos` fixture's object with a suite's claim (chaos.py), and `chaoskit nightly`, which loops the
suites with fresh seeds."""
