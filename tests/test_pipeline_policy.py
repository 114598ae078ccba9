"""Policy parsing: defaults, and every error names file, line and key."""

from __future__ import annotations

import pytest

from tailguard.pipeline.policy import Compact, PolicyError, Truncate, parse_policy

GOOD = """\
name = "p"
turn_tokens = [1, 10]
floor = 3
floor_unit = "turns"

[[stage]]
kind = "truncate"
unit = "turns"
limit = 9

[[stage]]
kind = "compact"
trigger_unit = "tokens"
trigger = 50
keep_unit = "turns"
keep = 3
summary_tokens = 5
"""


def test_defaults_apply() -> None:
    p = parse_policy(GOOD, "p.toml")
    assert (p.base_tokens, p.keep_first) == (0, 0)
    assert p.stages == (Truncate("turns", 9, line=6), Compact("tokens", 50, "turns", 3, 5, 0, 11))


@pytest.mark.parametrize(("edit", "message"), [
    (("limit = 9", "limit = -1"), "p.toml:9: stage.0.limit: must be >= 0, got -1"),
    (("limit = 9", 'limit = "9"'), "p.toml:9: stage.0.limit: expected a non-negative integer, got '9'"),
    (('\nunit = "turns"', '\nunit = "pages"'),
     'p.toml:8: stage.0.unit: unit must be "turns" or "tokens", got \'pages\''),
    (("keep = 3\n", ""), "p.toml:11: stage.1.keep: required key is missing"),
    (("turn_tokens = [1, 10]", "turn_tokens = [5, 2]"), "p.toml:2: turn_tokens: cannot have max=2 < min=5"),
    (("turn_tokens = [1, 10]", "turn_tokens = [0, 2]"),
     "p.toml:2: turn_tokens: min must be >= 1 (a turn holds a token), got 0"),
    (("floor = 3", "flor = 3"), "p.toml:3: flor: unknown key"),
    (('kind = "truncate"', 'kind = "trim"'), "p.toml:7: stage.0.kind: unknown stage kind 'trim'"),
    (("floor = 3", "floor = true"), "p.toml:3: floor: expected a non-negative integer, got True"),
    (("summary_tokens = 5", 'summary_tokens = 5\ninput = "tail"'),
     'p.toml:18: stage.1.input: must be "candidates" or "all", got \'tail\''),
    (("summary_tokens = 5", "summary_tokens = 5\ninput = 1"),
     'p.toml:18: stage.1.input: must be "candidates" or "all", got 1'),
    (("summary_tokens = 5", 'summary_tokens = 5\ninput = "All"'),
     'p.toml:18: stage.1.input: must be "candidates" or "all", got \'All\''),
    (('limit = 9', 'limit = 9\ninput = "all"'), "p.toml:10: stage.0.input: unknown key"),
])
def test_errors_name_file_line_key(edit: tuple[str, str], message: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(GOOD.replace(*edit, 1), "p.toml")
    assert str(info.value).startswith(message)


def test_input_parses() -> None:
    stages = parse_policy(GOOD + 'input = "all"\n', "p.toml").stages
    assert isinstance(stages[1], Compact) and stages[1].input == "all"
    stages = parse_policy(GOOD + 'input = "candidates"\n', "p.toml").stages
    assert isinstance(stages[1], Compact) and stages[1].input == "candidates"
    assert Compact("tokens", 1, "turns", 1, 1).input == "candidates"


def test_toml_syntax_error_has_line() -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(GOOD.replace("floor = 3", "floor = = 3"), "p.toml")
    assert str(info.value).startswith("p.toml:3: toml: ")
