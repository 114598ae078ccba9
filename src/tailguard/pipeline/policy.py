"""Policy files: TOML parsing and validation with file, line and key in every error.

A policy describes one reference pipeline (brief section 6). Parsing never raises
anything but :class:`PolicyError`, whose ``str`` is ``FILE:LINE: key: reason``.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

from tailguard.base.args import is_int
from tailguard.base.errors import PolicyError as PolicyError
from tailguard.base.jsonstrict import MAX_DEPTH, MAX_INT_DIGITS, MAX_POLICY_BYTES
from tailguard.base.safeio import open_regular
from tailguard.base.vocab import UNITS, Unit
from tailguard.pipeline.presets import expand

Input = Literal["candidates", "all"]
INPUTS: tuple[str, ...] = ("candidates", "all")
Placement = Literal["separate", "message"]
PLACEMENTS: tuple[str, ...] = ("separate", "message")
OnFailure = Literal["halt", "proceed"]
Cut = Literal["turns", "messages"]
CUTS: tuple[str, ...] = ("turns", "messages")
ON_FAILURE: tuple[str, ...] = ("halt", "proceed")
Clause = tuple[tuple[Unit, int], ...]  # one trigger clause: every (unit, threshold) must be met


@dataclass(frozen=True)
class Truncate:
    """Budget enforcement: drop the oldest unpinned turns while over ``limit``."""

    unit: Unit
    limit: int
    line: int = 0
    kind: Literal["truncate"] = "truncate"


@dataclass(frozen=True)
class Compact:
    """Lossy summarization of everything but the retained tail.

    ``input``: what the summarizer is shown besides the earlier summary: the (seen)
    candidates only (``"candidates"``, the default: LangChain, the OpenAI Agents SDK,
    OpenHands) or the candidates and the retained tail (``"all"``, the seed's incident).
    """

    trigger_unit: Unit
    trigger: int
    keep_unit: Unit
    keep: int
    summary_tokens: int
    input_limit: int = 0
    line: int = 0
    kind: Literal["compact"] = "compact"
    input: Input = "candidates"
    summary: Placement = "separate"
    clip: bool = False
    input_limit_unit: Unit = "tokens"
    # ``trigger_any`` (LangChain's trigger lists and clauses): fire when any clause holds, a
    # clause holding when occupancy(unit) >= threshold for each of its (unit, threshold)
    # pairs. Empty: the one clause ``((trigger_unit, trigger),)``.
    trigger_any: tuple[Clause, ...] = ()
    # spec 1.2 (brief 6d): ``"messages"``: LangChain's message-level cut (``_find_safe_cutoff_point``):
    # nothing happens while the whole context, the earlier summary included, is within ``keep``;
    # a ``messages`` keep keeps every turn holding one of the newest ``keep`` messages (the cut
    # moves back to the start of its turn), a ``tokens`` keep the newest whole turns within it
    # and always the newest turn. ``"turns"`` (default): the newest whole turns within ``keep``.
    cut: Cut = "turns"
    # spec 1.2: the input limit while no summary is in the context (langmem trims its first
    # summarization to ``max_tokens``, later ones to ``max_tokens`` minus the summary); 0: ``input_limit``
    first_input_limit: int = 0
    # spec 1.2: ``trim_messages(start_on="human")`` after the input limit (LangChain): when the
    # limit cuts a candidate turn of 2 or more messages (read as an AI message and its tool
    # results; a turn of one message as the user's), the seen turns older than the oldest seen
    # one-message turn are not shown either
    start_on_human: bool = False
    # spec 1.2: a ``tokens`` keep counted with ``base_tokens`` and the pinned turns' tokens: the
    # tail is the newest whole turns within ``keep`` minus them (OpenHands' token rule keeps the
    # newest events under half its limit less the first ``keep_first`` events' tokens)
    keep_less_pinned: bool = False
    # spec 1.2: a compaction that would leave out of the context fewer than ``min_progress`` of
    # the context's turns (the pinned, the summary, the verbatim; the earlier summary counts
    # as left out with ``summary = "message"``) keeps no tail instead (OpenHands' hard context
    # reset). Compared as the decimal written (0.1 is 1/10); 0: off
    min_progress: float = 0.0

    def limit_for(self, has_summary: bool) -> int:
        """The input limit of a compaction, given whether a summary is in the context."""
        return self.first_input_limit if self.first_input_limit and not has_summary else self.input_limit

    @property
    def clauses(self) -> tuple[Clause, ...]:
        """When the stage fires: OR over the clauses, AND within each."""
        return self.trigger_any or (((self.trigger_unit, self.trigger),),)

    def progress(self) -> tuple[int, int]:
        """``min_progress`` as a fraction ``(numerator, denominator)`` of the decimal written."""
        value = Fraction(str(self.min_progress))
        return value.numerator, value.denominator

    def resets(self, left_out: int, context: int) -> bool:
        """Whether a compaction leaving ``left_out`` of ``context`` turns out is under
        ``min_progress`` (it then keeps no tail).

        >>> Compact("tokens", 9, "tokens", 4, 1, min_progress=0.1).resets(2, 21), \\
        ...     Compact("tokens", 9, "tokens", 4, 1, min_progress=0.1).resets(2, 20)
        (True, False)
        """
        num, den = self.progress()
        return bool(self.min_progress) and left_out * den < num * context

    @property
    def trigger_units(self) -> frozenset[Unit]:
        """Every unit a trigger clause reads."""
        return frozenset(unit for clause in self.clauses for unit, _ in clause)

    def describe_trigger(self) -> str:
        """``170000 tokens`` or ``(4000 tokens and 10 messages) or 50 messages``."""
        def one(clause: Clause) -> str:
            text = " and ".join(f"{value} {unit}" for unit, value in clause)
            return f"({text})" if len(clause) > 1 and len(self.clauses) > 1 else text
        return " or ".join(one(c) for c in self.clauses)


@dataclass(frozen=True)
class Spill:
    """Spec 1.1 (brief 6b): write every candidate of the next compact stage in the list to
    durable storage before it compacts. ``on_failure``: a failed write stops the session
    (``"halt"``, nothing lost) or the compaction proceeds unspilled (``"proceed"``,
    deepagents)."""

    on_failure: OnFailure
    line: int = 0
    kind: Literal["spill"] = "spill"


@dataclass(frozen=True)
class ClipArgs:
    """Spec 1.2 (brief 6d): argument clipping before the model call (deepagents'
    ``truncate_args_settings``). When occupancy in ``trigger_unit`` is at least ``trigger``,
    the tool-call arguments of every unpinned verbatim turn outside the newest ``keep``
    (``keep_unit``, whole turns counted like a compact stage's tail) are clipped in the view
    the model, the offload and the summarizer get. A turn of at least ``min_tokens`` tokens
    can hold an argument long enough to be clipped; each such turn is a **hole** (no copy of
    the argument survives anywhere the session can read: the offload writes the clipped view)."""

    trigger_unit: Unit
    trigger: int
    keep_unit: Unit
    keep: int
    min_tokens: int
    line: int = 0
    kind: Literal["clip_args"] = "clip_args"


Stage = Truncate | Compact | Spill | ClipArgs


@dataclass(frozen=True)
class Policy:
    """One parsed policy; ``lines`` maps dotted keys to source lines for diagnostics."""

    name: str
    turn_min: int
    turn_max: int
    floor: int
    floor_unit: Unit
    stages: tuple[Stage, ...] = ()
    base_tokens: int = 0
    keep_first: int = 0
    window: int = 0  # spec 1.1: the model's context window in tokens (0: none)
    messages_per_turn: tuple[int, int] = (1, 1)  # spec 1.1: [min, max] messages of one turn
    file: str = "<policy>"
    lines: dict[str, int] = field(default_factory=dict, compare=False, hash=False)

    def with_knob(self, knob: str, value: int, stage: int | None = None) -> Policy:
        """A copy with one knob changed (``stage`` selects the stage for stage knobs)."""
        if stage is None:
            if knob == "turn_max":
                return replace(self, turn_max=value)
            if knob == "floor":
                return replace(self, floor=value)
            raise ValueError(f"unknown policy knob {knob!r}")
        stages = list(self.stages)
        stages[stage] = replace(stages[stage], **{knob: value})  # type: ignore[arg-type]
        return replace(self, stages=tuple(stages))

    def line_of(self, key: str) -> int:
        """Source line of a dotted key (``stage.1.limit``), falling back to its table."""
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key.rpartition(".")[0]
        return 1


_TOP = {
    "name", "base_tokens", "keep_first", "turn_tokens", "floor", "floor_unit", "stage", "window",
    "messages_per_turn",
}
# knobs that may be written ["fraction", x]: x of the window, rounded down (brief 6b)
_FRACTIONAL = {"limit", "trigger", "keep", "input_limit", "first_input_limit"}
_TRUNCATE = {"kind", "unit", "limit"}
_COMPACT = {
    "kind", "trigger_unit", "trigger", "keep_unit", "keep", "summary_tokens", "input_limit", "input",
    "summary", "clip", "input_limit_unit", "trigger_any", "cut", "first_input_limit", "start_on_human",
    "keep_less_pinned", "min_progress",
}
_SPILL = {"kind", "on_failure"}
_CLIP_ARGS = {"kind", "trigger_unit", "trigger", "keep_unit", "keep", "min_tokens"}
_KEY_RE = re.compile(r"^\s*([A-Za-z0-9_\-]+|\"(?:[^\"\\]|\\.)*\"|'[^']*')\s*=")


def _locate(text: str) -> dict[str, int]:
    """Map ``key`` / ``stage.i`` / ``stage.i.key`` to 1-based lines (simple TOML subset)."""
    lines: dict[str, int] = {}
    prefix = ""
    stage_count = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if stripped.startswith("[[") and stripped.split("#")[0].strip() == "[[stage]]":
            prefix = f"stage.{stage_count}."
            lines[f"stage.{stage_count}"] = number
            stage_count += 1
            continue
        if stripped.startswith("["):
            prefix = stripped.strip("[] ").split("#")[0].strip() + "."
            continue
        match = _KEY_RE.match(raw)
        if match:
            lines.setdefault(prefix + _bare_key(match.group(1)), number)
    return lines


def _bare_key(token: str) -> str:
    """A TOML key as parsed: a quoted key ("a b", 'c', "\\u0041") without its quotes and escapes."""
    if token[:1] not in ("'", '"'):
        return token
    try:
        return next(iter(tomllib.loads(f"{token} = 0")))
    except (tomllib.TOMLDecodeError, StopIteration):
        return token.strip(token[0])


class _Reader:
    """Typed accessors that raise :class:`PolicyError` naming file, line and key."""

    def __init__(self, file: str, lines: dict[str, int], window: int = 0) -> None:
        self.file, self.lines, self.window = file, lines, window

    def fail(self, key: str, reason: str, at: str | None = None) -> PolicyError:
        """The error for ``key`` (as shown), at the line of ``at`` (the key as parsed; default ``key``)."""
        probe = key if at is None else at
        while probe and probe not in self.lines:
            probe = probe.rpartition(".")[0]
        return PolicyError(self.file, self.lines.get(probe, 1), key, reason)

    def integer(self, table: dict[str, Any], key: str, path: str, default: int | None) -> int:
        if key not in table:
            if default is None:
                raise self.fail(path, "required key is missing")
            return default
        value = table[key]
        if isinstance(value, list) and key in _FRACTIONAL and path.startswith("stage."):
            return self.fraction(value, path)
        if not is_int(value):
            hint = ' or ["fraction", x] of the window' if key in _FRACTIONAL and \
                path.startswith("stage.") else ""
            raise self.fail(path, f"expected a non-negative integer{hint}, got {value!r}")
        if value < 0:
            raise self.fail(path, f"must be >= 0, got {value}")
        return value

    def fraction(self, value: list[Any], path: str) -> int:
        """``["fraction", x]``: ``floor(x * window)`` tokens (LangChain's and deepagents'
        ``("fraction", 0.85)``); needs ``window`` and ``0 <= x <= 1``."""
        if len(value) != 2 or value[0] != "fraction" or isinstance(value[1], bool) \
                or not isinstance(value[1], int | float):
            raise self.fail(path, f'expected an integer or ["fraction", x], got {value!r}')
        if not 0 <= value[1] <= 1:
            raise self.fail(path, f"fraction must be in [0, 1], got {value[1]!r}")
        if not self.window:
            raise self.fail(path, "a fraction of the window needs a top-level `window`")
        return int(value[1] * self.window)

    def unit(self, table: dict[str, Any], key: str, path: str) -> Unit:
        if key not in table:
            raise self.fail(path, "required key is missing")
        value = table[key]
        if value not in UNITS:
            raise self.fail(path, f"unit must be \"turns\", \"tokens\" or \"messages\", got {value!r}")
        return "turns" if value == "turns" else "messages" if value == "messages" else "tokens"

    def choice(self, table: dict[str, Any], key: str, path: str, allowed: tuple[str, ...]) -> str:
        value = table.get(key, allowed[0])
        if not isinstance(value, str) or value not in allowed:
            choices = " or ".join(f'"{a}"' for a in allowed)
            raise self.fail(path, f"must be {choices}, got {value!r}")
        return value

    def unknown(self, table: dict[str, Any], allowed: set[str], path: str) -> None:
        for key in table:
            if key not in allowed:
                shown = key if re.fullmatch(r"[A-Za-z0-9_\-]+", key) else json.dumps(key)  # "" is a key too
                raise self.fail(f"{path}{shown}", f"unknown key (allowed: {', '.join(sorted(allowed))})",
                                at=f"{path}{key}")


def _stage(r: _Reader, raw: Any, index: int) -> Stage:
    path = f"stage.{index}"
    if not isinstance(raw, dict):
        raise r.fail(path, "each [[stage]] must be a table")
    kind = raw.get("kind")
    line = r.lines.get(path, 1)
    for knob, unit_key in (("limit", "unit"), ("trigger", "trigger_unit"), ("keep", "keep_unit"),
                           ("input_limit", "input_limit_unit"), ("first_input_limit", "input_limit_unit")):
        default_unit = "tokens" if knob in ("input_limit", "first_input_limit") else None
        if isinstance(raw.get(knob), list) and raw.get(unit_key, default_unit) != "tokens":
            raise r.fail(f"{path}.{knob}", f"a fraction of the window is in tokens, but "
                                           f"{unit_key} is {raw.get(unit_key)!r}")
    if kind == "truncate":
        r.unknown(raw, _TRUNCATE, path + ".")
        return Truncate(
            unit=r.unit(raw, "unit", f"{path}.unit"),
            limit=r.integer(raw, "limit", f"{path}.limit", None),
            line=line,
        )
    if kind == "spill":
        r.unknown(raw, _SPILL, path + ".")
        if "on_failure" not in raw:
            raise r.fail(f"{path}.on_failure", 'required key is missing (expected "halt" or "proceed")')
        on_failure = r.choice(raw, "on_failure", f"{path}.on_failure", ON_FAILURE)
        return Spill(on_failure="proceed" if on_failure == "proceed" else "halt", line=line)
    if kind == "compact":
        r.unknown(raw, _COMPACT, path + ".")
        clip = raw.get("clip", False)
        if not isinstance(clip, bool):
            raise r.fail(f"{path}.clip", f"expected true or false, got {clip!r}")
        start_on_human = raw.get("start_on_human", False)
        if not isinstance(start_on_human, bool):
            raise r.fail(f"{path}.start_on_human", f"expected true or false, got {start_on_human!r}")
        keep_less_pinned = raw.get("keep_less_pinned", False)
        if not isinstance(keep_less_pinned, bool):
            raise r.fail(f"{path}.keep_less_pinned", f"expected true or false, got {keep_less_pinned!r}")
        min_progress = raw.get("min_progress", 0)
        if isinstance(min_progress, bool) or not isinstance(min_progress, (int, float)) or \
                not 0 <= min_progress < 1:
            raise r.fail(f"{path}.min_progress", f"expected a number from 0 (off) up to but not "
                                                 f"including 1, got {min_progress!r}")
        placement = r.choice(raw, "summary", f"{path}.summary", PLACEMENTS)
        trigger_any = _trigger_any(r, raw, path)
        first = trigger_any[0][0] if trigger_any else None
        compact = Compact(
            trigger_unit=first[0] if first else r.unit(raw, "trigger_unit", f"{path}.trigger_unit"),
            trigger=first[1] if first else r.integer(raw, "trigger", f"{path}.trigger", None),
            trigger_any=trigger_any,
            keep_unit=r.unit(raw, "keep_unit", f"{path}.keep_unit"),
            keep=r.integer(raw, "keep", f"{path}.keep", None),
            summary_tokens=r.integer(raw, "summary_tokens", f"{path}.summary_tokens", None),
            input_limit=r.integer(raw, "input_limit", f"{path}.input_limit", 0),
            line=line,
            input="all" if r.choice(raw, "input", f"{path}.input", INPUTS) == "all" else "candidates",
            summary="message" if placement == "message" else "separate",
            clip=clip,
            input_limit_unit="messages" if r.choice(
                raw, "input_limit_unit", f"{path}.input_limit_unit", ("tokens", "messages"),
            ) == "messages" else "tokens",
            cut="messages" if r.choice(raw, "cut", f"{path}.cut", CUTS) == "messages" else "turns",
            first_input_limit=r.integer(raw, "first_input_limit", f"{path}.first_input_limit", 0),
            start_on_human=start_on_human,
            keep_less_pinned=keep_less_pinned,
            min_progress=float(min_progress),
        )
        if keep_less_pinned and compact.keep_unit != "tokens":
            raise r.fail(f"{path}.keep_less_pinned", 'needs keep_unit "tokens" (it subtracts the pinned '
                                                     "turns' tokens from keep)")
        if start_on_human and not compact.input_limit:
            raise r.fail(f"{path}.start_on_human", "needs an input_limit > 0 (it acts on what the limit cut)")
        if compact.first_input_limit and not compact.input_limit:
            raise r.fail(f"{path}.first_input_limit", "needs an input_limit > 0 (it replaces "
                                                      "input_limit before the first summary)")
        if compact.cut == "messages" and compact.keep_unit == "turns":
            raise r.fail(f"{path}.cut", 'cut = "messages" needs keep_unit "tokens" or "messages"')
        if clip and compact.input_limit == 0:
            raise r.fail(f"{path}.clip", "clipping needs an input_limit > 0 (it clips the oldest "
                                         "candidate that does not fit it)")
        return compact
    if kind == "clip_args":
        r.unknown(raw, _CLIP_ARGS, path + ".")
        clip_args = ClipArgs(
            trigger_unit=r.unit(raw, "trigger_unit", f"{path}.trigger_unit"),
            trigger=r.integer(raw, "trigger", f"{path}.trigger", None),
            keep_unit=r.unit(raw, "keep_unit", f"{path}.keep_unit"),
            keep=r.integer(raw, "keep", f"{path}.keep", None),
            min_tokens=r.integer(raw, "min_tokens", f"{path}.min_tokens", None),
            line=line,
        )
        if clip_args.min_tokens < 1:
            raise r.fail(f"{path}.min_tokens", f"must be >= 1 (a clipped argument holds a token), "
                                               f"got {clip_args.min_tokens}")
        return clip_args
    reason = "required key is missing" if kind is None else f"unknown stage kind {kind!r}"
    raise r.fail(f"{path}.kind", reason + ' (expected "truncate", "compact", "spill" or "clip_args")')


def _trigger_any(r: _Reader, raw: dict[str, Any], path: str) -> tuple[Clause, ...]:
    """``trigger_any = [{tokens = 4000, messages = 10}, {messages = 50}]``: OR over the
    tables, AND within one (LangChain's trigger lists and ``TriggerClause`` dicts). Each
    threshold is an integer >= 1 (tokens may be ``["fraction", x]`` of the window). It
    replaces ``trigger_unit`` and ``trigger``, which must then be absent."""
    if "trigger_any" not in raw:
        return ()
    key = f"{path}.trigger_any"
    for single in ("trigger", "trigger_unit"):
        if single in raw:
            raise r.fail(f"{path}.{single}", "give either trigger_any or trigger_unit and trigger, not both")
    value = raw["trigger_any"]
    if not isinstance(value, list) or not value:
        raise r.fail(key, f"expected a non-empty list of tables such as {{tokens = 4000, messages = 10}}, "
                          f"got {value!r}")
    clauses: list[Clause] = []
    for i, table in enumerate(value):
        where = f"{key}.{i}"
        if not isinstance(table, dict) or not table:
            raise r.fail(where, f"expected a non-empty table of unit = threshold, got {table!r}")
        clause: list[tuple[Unit, int]] = []
        for unit, amount in table.items():
            if unit not in UNITS:
                raise r.fail(f"{where}.{unit}", 'unit must be "turns", "tokens" or "messages"', at=key)
            if isinstance(amount, list) and unit != "tokens":
                raise r.fail(f"{where}.{unit}", "a fraction of the window is in tokens", at=key)
            threshold = r.fraction(amount, f"{where}.{unit}") if isinstance(amount, list) else amount
            if not is_int(threshold) or threshold < 1:
                raise r.fail(f"{where}.{unit}", f"expected an integer >= 1, got {amount!r}", at=key)
            clause.append(("turns" if unit == "turns" else "messages" if unit == "messages" else "tokens",
                           threshold))
        clauses.append(tuple(clause))
    return tuple(clauses)


def _check_limits(r: _Reader, value: Any, path: str, depth: int) -> None:
    """Nesting depth and integer size (SPEC.md "Limits"), before any value is used."""
    if depth > MAX_DEPTH:
        raise r.fail(path or "toml", f"nested more than {MAX_DEPTH} deep (the limit)")
    if isinstance(value, dict):
        for key, item in value.items():
            _check_limits(r, item, f"{path}.{key}" if path else str(key), depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check_limits(r, item, f"{path}.{i}", depth + 1)
    elif isinstance(value, int) and not -_INT_BOUND < value < _INT_BOUND:
        raise r.fail(path, f"an integer of more than {MAX_INT_DIGITS:,} digits (the limit)")


_INT_BOUND = 10**MAX_INT_DIGITS


def parse_policy(text: str, file: str = "<policy>") -> Policy:
    """Parse and validate policy text; raises :class:`PolicyError` on any problem."""
    lines = _locate(text)
    r = _Reader(file, lines)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"at line (\d+)", str(exc))
        raise PolicyError(file, int(match.group(1)) if match else 1, "toml", str(exc)) from None
    except ValueError:  # an integer too long for the interpreter to convert
        long = re.search(r"[0-9][0-9_]{%d,}" % MAX_INT_DIGITS, text)  # noqa: UP031
        line = text.count("\n", 0, long.start()) + 1 if long else 1
        reason = f"an integer of more than {MAX_INT_DIGITS:,} digits (the limit)"
        raise PolicyError(file, line, "toml", reason) from None
    except RecursionError:
        raise PolicyError(file, 1, "toml", f"nested too deeply (the limit is {MAX_DEPTH})") from None
    _check_limits(r, data, "", 1)
    if "framework" in data:  # brief 6c: a framework preset writes the stages (pipeline/presets/)
        data = expand(data, file, lines, text)
    r.unknown(data, _TOP, "")
    r.window = r.integer(data, "window", "window", 0)
    if "window" in data and r.window < 1:
        raise r.fail("window", f"must be >= 1 token, got {r.window}")
    name = data.get("name", Path(file).stem)
    if not isinstance(name, str):
        raise r.fail("name", f"expected a string, got {name!r}")
    if "turn_tokens" not in data:
        raise r.fail("turn_tokens", "required key is missing")
    tt = data["turn_tokens"]
    if (
        not isinstance(tt, list)
        or len(tt) != 2
        or any(not is_int(v) for v in tt)
    ):
        raise r.fail("turn_tokens", f"expected [min, max] integers, got {tt!r}")
    if tt[0] < 1:
        raise r.fail("turn_tokens", f"min must be >= 1 (a turn holds a token), got {tt[0]}")
    if tt[1] < tt[0]:
        raise r.fail("turn_tokens", f"cannot have max={tt[1]} < min={tt[0]}")
    mpt = data.get("messages_per_turn", [1, 1])
    if (
        not isinstance(mpt, list)
        or len(mpt) != 2
        or any(not is_int(v) for v in mpt)
    ):
        raise r.fail("messages_per_turn", f"expected [min, max] integers, got {mpt!r}")
    if mpt[0] < 1:
        raise r.fail("messages_per_turn", f"min must be >= 1 (a turn holds a message), got {mpt[0]}")
    if mpt[1] < mpt[0]:
        raise r.fail("messages_per_turn", f"cannot have max={mpt[1]} < min={mpt[0]}")
    raw_stages = data.get("stage", [])
    if not isinstance(raw_stages, list):
        raise r.fail("stage", "use [[stage]] tables")
    return Policy(
        name=name,
        turn_min=tt[0],
        turn_max=tt[1],
        floor=r.integer(data, "floor", "floor", None),
        floor_unit=r.unit(data, "floor_unit", "floor_unit"),
        stages=tuple(_stage(r, s, i) for i, s in enumerate(raw_stages)),
        base_tokens=r.integer(data, "base_tokens", "base_tokens", 0),
        keep_first=r.integer(data, "keep_first", "keep_first", 0),
        window=r.window,
        messages_per_turn=(mpt[0], mpt[1]),
        file=file,
        lines=lines,
    )


def load_policy(path: str) -> Policy:
    """Read and parse a policy file; unreadable files are a :class:`PolicyError` too."""
    return parse_policy(read_policy_text(path), path)


def read_policy_text(path: str) -> str:
    """A policy file's text: a regular file of at most ``MAX_POLICY_BYTES``, UTF-8; anything else
    is a :class:`PolicyError` naming the file."""
    try:
        with open_regular(path) as f:  # a FIFO or device: an error naming it, never a hang
            raw = f.read(MAX_POLICY_BYTES + 1)
    except OSError as exc:
        raise PolicyError(path, 0, "file", exc.strerror or str(exc)) from None
    if len(raw) > MAX_POLICY_BYTES:
        raise PolicyError(path, 0, "file", f"a policy file over the limit of {MAX_POLICY_BYTES:,} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PolicyError(path, 1, "file", f"not UTF-8: {exc.reason}") from None
    return text
