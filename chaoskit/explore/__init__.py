"""`chaoskit explore`: a search over schedules of timed steps (admin changes, faults, client moves),
guided by the protocol states each run reached, that shrinks what it finds (docs/explore.md).

- steps.py: a schedule as data (Step, StepSchedule), rendered into a ChaosTest;
- grammar.py: which steps exist and when each is valid (the model of what earlier steps leave);
- edits.py: how a schedule becomes another (insert, delete, move, swap, retarget, retime);
- coverage.py: a run's folder -> the abstract states and transitions it reached;
- oracle.py: what of a verdict is a finding (and what an unclean election excuses);
- lanes.py: clusters kept up between runs (fresh topics and group each run, nodes restored);
- corpus.py: the explore's folder: corpus, runs, coverage and findings, written as they arrive;
- search.py: the loop (coverage-guided or plain random), its progress and its stop;
- shrink.py: a finding reduced to a smallest schedule that still fails in 2 of 3 replays;
- cli.py: the `chaoskit explore` command.
"""
