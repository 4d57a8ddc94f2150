"""`chaoskit explore`'s command line (chaoskit.explore.cli): the base a suite or a test.json gives,
and bad input answered with one line and exit 3, before anything starts."""
from __future__ import annotations

import argparse
import json

import pytest

from chaoskit.explore.cli import register, settings_from

def args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    return parser.parse_args(["explore", *argv])


def test_a_suite_s_smoke_test_is_the_base_with_its_story_and_the_options_over_it(tmp_path):
    s, resumed = settings_from(args("kip253_expansion", "--client", "kafka-python", "--duration", "8", "--seed", "3",
                                    "--out", str(tmp_path / "x"), "--mutation", "linear-hashing"))
    assert not resumed and s.seed == 3 and s.out == tmp_path / "x"
    assert (s.base.client, s.base.duration_s, s.base.mutations, s.base.profile) == \
        ("kafka-python", 8.0, ["linear-hashing"], "patched")
    assert any(step["fault"] == "admin" for step in s.base.faults["scripted"])  # the suite's expansions


def test_without_a_base_the_default_one_and_a_test_json_as_it_is(tmp_path):
    s, _ = settings_from(args("--out", str(tmp_path / "x")))
    assert s.base.name == "explore" and s.base.workload_options["consumers"] == 3 and s.base.faults is None
    test = tmp_path / "t.json"
    test.write_text(json.dumps({"name": "mine", "duration_s": 6, "client": "ordered"}))
    s, _ = settings_from(args(str(test), "--out", str(tmp_path / "y")))
    assert (s.base.name, s.base.duration_s) == ("mine", 6)


@pytest.mark.parametrize("argv, message", [
    (["{tmp}/nowhere.json"], "no such test.json"),
    (["{tmp}/list.json"], "not a list"),
    (["--budget", "soon"], "a duration is like 90s"),
    (["no_such_suite"], "no suite 'no_such_suite'"),
    (["--mutation", "gates"], "no mutation named gates"),
    (["--jobs", "0"], "--jobs must be at least 1"),
    (["--resume", "{tmp}/nowhere"], "holds no explore"),
    (["--faults", "quake"], "no fault named quake"),
])
def test_bad_input_gets_one_line_and_exit_3(tmp_path, capsys, argv, message):
    from chaoskit.cli import main

    (tmp_path / "list.json").write_text("[1, 2]")
    code = main(["explore", *(a.format(tmp=tmp_path) for a in argv), "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert code == 3 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "x").exists()
