"""The EDN reader: the forms Jepsen histories use, and clear errors for broken text."""
from __future__ import annotations

import pytest

from chaoskit.history.edn import EdnError, Keyword, dumps, loads, loads_prefix


@pytest.mark.parametrize("text,value", [
    ("{:process 0, :type :invoke, :f :write, :value 3}", {"process": 0, "type": "invoke", "f": "write", "value": 3}),
    ("[1 4]", [1, 4]),
    ("(1 nil true false)", [1, None, True, False]),
    ('"a \\"q\\" \\n b"', 'a "q" \n b'),
    ("#{3 1 2}", [1, 2, 3]),
    ("{:a {:b [1 -2.5 7N]}}", {"a": {"b": [1, -2.5, 7]}}),
    ("#jepsen.history.Op{:index 3 :f :read}", {"index": 3, "f": "read"}),
    ("[1 #_ 2 3] ; comment", [1, 3]),
    ("{[1 2] :x}", {(1, 2): "x"}),
    ("{{:a [1]} :x}", {(("a", (1,)),): "x"}),
    ("sym/bol", "sym/bol"),
])
def test_reads(text, value):
    assert loads(text) == value


@pytest.mark.parametrize("text,words", [
    ("{:process 0, :type", "ends inside"),
    ("[1 2", "ends inside"),
    ('"open', "never ends"),
    ("{:a}", "even number"),
    ("[1 2)", "expected"),
    ("1 2", "after the form"),
    ("", "empty"),
])
def test_broken_text_says_what_is_wrong(text, words):
    with pytest.raises(EdnError, match=words):
        loads(text)


def test_the_first_form_and_where_it_ends():
    text = '  [1 "a b"]\t:timeout more'
    value, end = loads_prefix(text)
    assert value == [1, "a b"] and text[end:] == "\t:timeout more"
    for broken, words in (("   ", "empty"), ("[1 2", "ends inside")):
        with pytest.raises(EdnError, match=words):
            loads_prefix(broken)


def test_written_values_read_back():
    value = {Keyword("f"): Keyword("send"), "a \"q\"\n\\": [1, None, True, False, -2.5, "x", (3, [])],
             Keyword("m"): {}}
    text = dumps(value)
    assert text.startswith("{:f :send, ")
    assert loads(text) == {"f": "send", "a \"q\"\n\\": [1, None, True, False, -2.5, "x", [3, []]], "m": {}}


def test_what_edn_cannot_hold_is_refused():
    with pytest.raises(EdnError, match="cannot write a set"):
        dumps({1, 2})


def test_keywords_and_map_keys_are_written_back_as_read():
    text = '{:f :send, :value [[:send :x 1]], {:k 1} "v", [1 2] nil}'
    value = loads(text)
    assert value["f"] == "send" and isinstance(value["f"], Keyword)
    assert dumps(value) == text
