"""Policy parsing: defaults, and every error names file, line and key."""

from __future__ import annotations

import pytest

from tailguard.pipeline.policy import Compact, PolicyError, Spill, Truncate, parse_policy

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
    (("limit = 9", 'limit = "9"'),
     "p.toml:9: stage.0.limit: expected a non-negative integer or [\"fraction\", x] of the window, "
     "got '9'"),
    (('\nunit = "turns"', '\nunit = "pages"'),
     'p.toml:8: stage.0.unit: unit must be "turns", "tokens" or "messages", got \'pages\''),
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
    (("summary_tokens = 5", "summary_tokens = 5\ntrigger_any = [{turns = 3}]"),
     "p.toml:14: stage.1.trigger: give either trigger_any or trigger_unit and trigger, not both"),
    (('trigger_unit = "tokens"\ntrigger = 50', "trigger_any = []"),
     "p.toml:13: stage.1.trigger_any: expected a non-empty list of tables such as "
     "{tokens = 4000, messages = 10}, got []"),
    (('trigger_unit = "tokens"\ntrigger = 50', "trigger_any = [{pages = 3}]"),
     'p.toml:13: stage.1.trigger_any.0.pages: unit must be "turns", "tokens" or "messages"'),
    (('trigger_unit = "tokens"\ntrigger = 50', "trigger_any = [{turns = 3}, {tokens = 0}]"),
     "p.toml:13: stage.1.trigger_any.1.tokens: expected an integer >= 1, got 0"),
    (('trigger_unit = "tokens"\ntrigger = 50', 'trigger_any = [{turns = ["fraction", 0.5]}]'),
     "p.toml:13: stage.1.trigger_any.0.turns: a fraction of the window is in tokens"),
    (('trigger_unit = "tokens"\ntrigger = 50', "trigger_any = [{}]"),
     "p.toml:13: stage.1.trigger_any.0: expected a non-empty table of unit = threshold, got {}"),
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


WINDOWED = GOOD.replace('name = "p"', 'name = "p"\nwindow = 1000').replace(
    'unit = "turns"\nlimit = 9', 'unit = "tokens"\nlimit = ["fraction", 0.95]').replace(
    "trigger = 50", 'trigger = ["fraction", 0.29]')


def test_window_and_fractions_resolve_as_the_frameworks_compute_them() -> None:
    """``int(x * window)``: 0.29 * 200000 is 57999.99999999999 in floating point, and
    LangChain's ``int(max_input_tokens * fraction)`` gives 57999 too."""
    p = parse_policy(WINDOWED, "p.toml")
    assert p.window == 1000
    assert p.stages[0] == Truncate("tokens", 950, line=7)
    assert p.stages[1].trigger == 290  # type: ignore[union-attr]
    wide = parse_policy(WINDOWED.replace("window = 1000", "window = 200000"), "p.toml")
    assert wide.stages[1].trigger == 57999  # type: ignore[union-attr]


@pytest.mark.parametrize(("edit", "message"), [
    (("window = 1000", "window = 0"), "p.toml:2: window: must be >= 1 token, got 0"),
    (("window = 1000\n", ""),
     "p.toml:9: stage.0.limit: a fraction of the window needs a top-level `window`"),
    (('["fraction", 0.95]', '["fraction", 1.5]'),
     "p.toml:10: stage.0.limit: fraction must be in [0, 1], got 1.5"),
    (('["fraction", 0.95]', '["share", 0.5]'),
     "p.toml:10: stage.0.limit: expected an integer or [\"fraction\", x], got ['share', 0.5]"),
    (('keep = 3', 'keep = ["fraction", 0.1]'),
     "p.toml:17: stage.1.keep: a fraction of the window is in tokens, but keep_unit is 'turns'"),
])
def test_window_errors_name_file_line_and_key(edit: tuple[str, str], message: str) -> None:
    with pytest.raises(PolicyError) as err:
        parse_policy(WINDOWED.replace(*edit), "p.toml")
    assert str(err.value) == message


def test_window_overflow_without_a_truncate_stage() -> None:
    """Brief 6b / issue 10: LangChain's shape with no truncator, turns of up to 20k tokens
    and 20 kept: the tail alone outgrows a 200k window (1.0 said safe: no stage overflowed)."""
    from tailguard.pipeline.solver import decide

    text = ('window = 200000\nbase_tokens = 1000\nturn_tokens = [1, 20000]\nfloor = 20\n'
            'floor_unit = "turns"\n[[stage]]\nkind = "compact"\ntrigger_unit = "tokens"\n'
            'trigger = ["fraction", 0.85]\nkeep_unit = "turns"\nkeep = 20\nsummary_tokens = 1500\n')
    got = decide(parse_policy(text, "w.toml"))
    assert got.verdict == "unsafe" and len(got.trace) == 10
    [over] = got.findings
    assert (over.kind, over.stage, over.detail) == ("overflow", 1, "200001 tokens > window 200000")
    unbounded = text.replace("window = 200000\n", "").replace('["fraction", 0.85]', "170000")
    assert decide(parse_policy(unbounded, "w.toml")).verdict == "safe"


SPILLED = GOOD.replace("floor = 3", 'floor = 3\nmessages_per_turn = [1, 4]').replace(
    '[[stage]]\nkind = "compact"', '[[stage]]\nkind = "spill"\non_failure = "proceed"\n\n'
    '[[stage]]\nkind = "compact"') + ('summary = "message"\nclip = true\ninput_limit = 4\n'
                                     'input_limit_unit = "messages"\n')


def test_spec_1_1_language_parses() -> None:
    """Brief 6b: messages per turn, the spill stage, summary placement, clipping and the
    unit of the input limit."""
    p = parse_policy(SPILLED, "p.toml")
    assert p.messages_per_turn == (1, 4)
    assert p.stages[1] == Spill("proceed", line=12)
    compact = p.stages[2]
    assert isinstance(compact, Compact)
    assert (compact.summary, compact.clip, compact.input_limit, compact.input_limit_unit) == (
        "message", True, 4, "messages")
    plain = parse_policy(GOOD, "p.toml")
    assert plain.messages_per_turn == (1, 1)
    assert plain.stages[1] == Compact("tokens", 50, "turns", 3, 5, 0, 11, summary="separate",
                                      clip=False, input_limit_unit="tokens")


@pytest.mark.parametrize(("edit", "message"), [
    (("messages_per_turn = [1, 4]", "messages_per_turn = [0, 4]"),
     "p.toml:4: messages_per_turn: min must be >= 1 (a turn holds a message), got 0"),
    (("messages_per_turn = [1, 4]", "messages_per_turn = [3, 2]"),
     "p.toml:4: messages_per_turn: cannot have max=2 < min=3"),
    (("messages_per_turn = [1, 4]", "messages_per_turn = 2"),
     "p.toml:4: messages_per_turn: expected [min, max] integers, got 2"),
    (('on_failure = "proceed"', 'on_failure = "retry"'),
     "p.toml:14: stage.1.on_failure: must be \"halt\" or \"proceed\", got 'retry'"),
    (('on_failure = "proceed"\n', ""),
     'p.toml:12: stage.1.on_failure: required key is missing (expected "halt" or "proceed")'),
    (('on_failure = "proceed"', 'on_failure = "halt"\nlimit = 3'), "p.toml:15: stage.1.limit: unknown key"),
    (('summary = "message"', 'summary = "inline"'),
     "p.toml:23: stage.2.summary: must be \"separate\" or \"message\", got 'inline'"),
    (("clip = true", 'clip = "yes"'), "p.toml:24: stage.2.clip: expected true or false, got 'yes'"),
    (("input_limit = 4", "input_limit = 0"),
     "p.toml:24: stage.2.clip: clipping needs an input_limit > 0"),
    (('input_limit_unit = "messages"', 'input_limit_unit = "pages"'),
     "p.toml:26: stage.2.input_limit_unit: must be \"tokens\" or \"messages\", got \'pages\'"),
    (("input_limit = 4", 'input_limit = ["fraction", 0.5]'),
     "p.toml:25: stage.2.input_limit: a fraction of the window is in tokens, but "
     "input_limit_unit is 'messages'"),
])
def test_spec_1_1_errors_name_file_line_key(edit: tuple[str, str], message: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(SPILLED.replace(*edit, 1), "p.toml")
    assert str(info.value).startswith(message)


def test_schema_accepts_every_example_and_rejects_a_bad_spill() -> None:
    """``spec/policy.schema.json`` describes what the parser reads: every bundled example
    validates, spec 1.1 keys included, and the validator is live (a spill stage without
    ``on_failure`` and a turn of 0 messages are rejected, as the parser rejects them; that a
    fraction needs a tokens unit is a cross-key rule the schema states in prose only)."""
    import json
    import tomllib
    from pathlib import Path

    import jsonschema

    root = Path(__file__).resolve().parents[1]
    schema = json.loads((root / "spec" / "policy.schema.json").read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    examples = sorted((root / "examples" / "policies").glob("*.toml"))
    assert examples
    for path in examples:
        validator.validate(tomllib.loads(path.read_text(encoding="utf-8")))
    spilled = tomllib.loads(SPILLED)
    validator.validate(spilled)
    for bad in (
        {**spilled, "stage": [spilled["stage"][0], {"kind": "spill"}]},
        {**spilled, "messages_per_turn": [0, 4]},
    ):
        assert not validator.is_valid(bad)
    good = tomllib.loads(GOOD)
    compact = good["stage"][1]
    any_of = {k: v for k, v in compact.items() if k not in ("trigger_unit", "trigger")}
    any_of["trigger_any"] = [{"tokens": 40, "messages": 4}, {"turns": 6}]
    validator.validate({**good, "stage": [good["stage"][0], any_of]})
    for bad_stage in ({**any_of, "trigger": 5}, {**any_of, "trigger_any": []},
                      {**any_of, "trigger_any": [{"pages": 3}]}, {**any_of, "trigger_any": [{}]}):
        assert not validator.is_valid({**good, "stage": [good["stage"][0], bad_stage]}), bad_stage


def test_trigger_any_is_an_or_of_ands() -> None:
    p = parse_policy(GOOD.replace('trigger_unit = "tokens"\ntrigger = 50',
                                  "trigger_any = [{tokens = 40, messages = 4}, {turns = 6}]"), "p.toml")
    stage = p.stages[1]
    assert isinstance(stage, Compact)
    assert stage.clauses == ((("tokens", 40), ("messages", 4)), (("turns", 6),))
    assert stage.describe_trigger() == "(40 tokens and 4 messages) or 6 turns"
    assert Compact("tokens", 50, "turns", 3, 5).clauses == ((("tokens", 50),),)
