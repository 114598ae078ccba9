"""What every framework preset is made of (brief 6c): a knob table, a translation into
the stages of brief 6b, the package versions it was validated on, and its known
differences from the real code, each with the reason.

A preset never builds a :class:`~tailguard.pipeline.policy.Policy` itself: it writes the
stage tables a user would have written by hand (``[[stage]]`` keys of docs/check-config.md),
and the policy parser reads them like any other, so a preset cannot reach a stage the
language does not have and ``check-config --explain`` can print exactly what was checked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from tailguard.base.args import is_int
from tailguard.base.errors import PolicyError

# What a knob's TOML value may be:
# ``size``: a LangChain-style context size ``["tokens"|"messages"|"fraction", n]``;
# ``size_or_off``: the same or ``false`` (Python ``None``: the feature is off);
# ``count``: an integer >= ``minimum``; ``count_or_off``: the same or ``false``;
# ``trigger``: ``size_or_off``, or LangChain's trigger clauses: a table ``{tokens = 4000,
# messages = 10}`` (AND) or a list of sizes and tables (OR), read as a :class:`TriggerAny`;
# ``settings``: a table (or ``false``) the knob's own ``read`` validates (deepagents'
# ``truncate_args_settings``).
KnobKind = Literal["size", "size_or_off", "count", "count_or_off", "trigger", "settings"]
SIZE_KINDS: tuple[str, ...] = ("tokens", "messages", "fraction")
Values = dict[str, Any]
Fail = Callable[[str, str], PolicyError]
# a ``settings`` knob's reader: (TOML value, fail, window) -> the validated form
Reader = Callable[[Any, Fail, int], Any]


@dataclass(frozen=True)
class TriggerAny:
    """LangChain's trigger list and clauses (``_normalize_trigger``): the middleware fires when
    any clause is met, a clause when every ``(kind, amount)`` of it is (kinds ``tokens``,
    ``messages``, ``fraction``)."""

    clauses: tuple[tuple[tuple[str, int | float], ...], ...]

    def toml(self) -> list[dict[str, Any]]:
        return [dict(clause) for clause in self.clauses]


@dataclass(frozen=True)
class Knob:
    """One framework knob, under the framework's own name, with its own default."""

    name: str
    kind: KnobKind
    default: Any  # already in the validated form: ("tokens", 4000), 20, None
    doc: str
    minimum: int = 1
    framework_knob: bool = True  # False: tailguard's own session fact (summary size)
    kinds: tuple[str, ...] = SIZE_KINDS  # for sizes: the kinds the framework accepts
    default_text: str = ""  # how --list-frameworks shows a default that depends on other knobs
    read: Reader | None = None  # ``settings`` knobs only


@dataclass(frozen=True)
class Difference:
    """A known difference between the real code and the translation, declared, never hidden.

    ``effect``: what it does to a verdict; ``tested``: how the differential test treats it."""

    name: str
    reason: str
    effect: str
    tested: str


@dataclass(frozen=True)
class Translation:
    """A preset's output: top-level policy keys and the ``[[stage]]`` tables, plus the knob
    values they came from (defaults applied) and which of them the policy set."""

    preset: str
    values: Values
    given: tuple[str, ...]
    top: dict[str, Any]
    stages: list[dict[str, Any]]


Translate = Callable[[Values], tuple[dict[str, Any], list[dict[str, Any]]]]
Check = Callable[[Values, Callable[[str, str], PolicyError]], None]


Resolve = Callable[[Values, tuple[str, ...]], Values]


def _no_check(values: Values, fail: Callable[[str, str], PolicyError]) -> None:
    return None


def _as_given(values: Values, given: tuple[str, ...]) -> Values:
    return values


@dataclass(frozen=True)
class Preset:
    """A framework's compaction mechanism as a policy preset (brief 6c)."""

    name: str  # the ``[framework] name`` that selects it
    summary: str  # one line: what the framework does
    knobs: tuple[Knob, ...]
    translate: Translate
    validated_on: tuple[str, ...]  # "package version" (or "repo@commit" for source-only)
    differential: str  # the test that drives the real package, or why none can run here
    differences: tuple[Difference, ...]
    top_keys: tuple[str, ...] = ()  # top-level keys besides the session's shape and floor
    check: Check = _no_check  # cross-knob validation (the framework's own ValueErrors)
    resolve: Resolve = _as_given  # defaults that depend on other knobs (deepagents' profile)
    doc: str = ""  # docs/presets/<page>.md
    aliases: tuple[str, ...] = field(default=())

    def knob(self, name: str) -> Knob:
        return next(k for k in self.knobs if k.name == name)


def read_knob(knob: Knob, value: Any, fail: Callable[[str, str], PolicyError], window: int) -> Any:
    """Validate one TOML value against its knob; return the validated form."""
    if knob.read is not None:
        return knob.read(value, fail, window)
    off = knob.kind in ("size_or_off", "count_or_off", "trigger")
    if value is False and off:
        return None
    if knob.kind == "trigger" and (isinstance(value, dict) or (
            isinstance(value, list) and value and all(isinstance(v, dict | list) for v in value))):
        return _trigger_any(knob, value, fail, window)
    if knob.kind in ("count", "count_or_off"):
        if not is_int(value):
            alt = " or false (off)" if off else ""
            raise fail(knob.name, f"expected an integer{alt}, got {value!r}")
        if value < knob.minimum:
            raise fail(knob.name, f"must be >= {knob.minimum}, got {value}")
        return value
    allowed = " | ".join(f'["{k}", n]' for k in knob.kinds) + (" or false (off)" if off else "")
    if not isinstance(value, list) or len(value) != 2 or not isinstance(value[0], str):
        raise fail(knob.name, f"expected {allowed}, got {value!r}")
    kind, amount = value
    if kind not in knob.kinds:
        raise fail(knob.name, f"unsupported kind {kind!r} (expected {allowed})")
    if kind == "fraction":
        if isinstance(amount, bool) or not isinstance(amount, int | float) or not 0 < amount <= 1:
            raise fail(knob.name, f"a fraction must be in (0, 1], got {amount!r}")
        if not window:
            raise fail(knob.name, "a fraction of the window needs `window` (the model profile's "
                                  "max_input_tokens)")
        return (kind, float(amount))
    if not is_int(amount) or amount <= 0:
        raise fail(knob.name, f"{kind} must be an integer > 0, got {amount!r}")
    return (kind, amount)


def _trigger_any(knob: Knob, value: dict[str, Any] | list[Any], fail: Callable[[str, str], PolicyError],
                 window: int) -> TriggerAny:
    """A clause table or a list of sizes and clause tables, validated as LangChain does
    (``_validate_mapping``: known kinds, integer counts and tokens, fractions in (0, 1])."""
    clauses: list[tuple[tuple[str, int | float], ...]] = []
    for item in [value] if isinstance(value, dict) else value:
        if isinstance(item, list):
            clauses.append((read_knob(Knob(knob.name, "size", None, ""), item, fail, window),))
            continue
        if not item:
            raise fail(knob.name, "a trigger clause must set at least one of tokens, messages, fraction")
        clause: list[tuple[str, int | float]] = []
        for kind, amount in item.items():
            if kind not in SIZE_KINDS:
                raise fail(knob.name, f"unsupported trigger metric {kind!r} (expected tokens, messages "
                                      f"or fraction)")
            clause.append(read_knob(Knob(knob.name, "size", None, ""), [kind, amount], fail, window))
        clauses.append(tuple(clause))
    return TriggerAny(tuple(clauses))


def size_value(size: tuple[str, Any], window: int) -> int:
    """A context size in tokens or messages, as LangChain resolves it: a fraction is
    ``int(window * x)`` and at least 1."""
    kind, amount = size
    if kind == "fraction":
        return max(1, int(window * amount))
    return int(amount)


def size_unit(size: tuple[str, Any]) -> str:
    return "messages" if size[0] == "messages" else "tokens"


def as_toml(value: Any) -> Any:
    """A validated knob value as it is written in TOML (tuples as lists, None as false)."""
    if value is None:
        return False
    if isinstance(value, TriggerAny):
        return value.toml()
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return {k: as_toml(v) for k, v in value.items()}
    return value


def knob_table(knobs: Mapping[str, Knob]) -> list[dict[str, Any]]:
    return [{"name": k.name, "kind": k.kind, "default": as_toml(k.default), "doc": k.doc,
             "framework_knob": k.framework_knob} for k in knobs.values()]
