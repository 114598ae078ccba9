"""OpenAI Agents SDK ``OpenAIResponsesCompactionSession`` over ``SessionSettings(limit=N)``.

Read from ``agents/memory/openai_responses_compaction_session.py`` of openai-agents 0.24.0.
``run_compaction()`` reads the session's items with its default limit
(``SessionSettings.limit``: the newest ``limit`` items), asks ``should_trigger_compaction``
(default: at least ``DEFAULT_COMPACTION_THRESHOLD = 10`` candidate items, i.e. items that are
neither user messages nor compaction items), sends those items to ``responses.compact`` and
replaces the **whole** store with the answer (the user messages it was shown, then one
``compaction`` item). So items older than the window are deleted unseen, and the compaction
item is an item like the others: the next window may or may not hold it. The Runner's
automatic compaction over a store with native suffix replacement (``SQLiteSession``) replaces
only the latest model exchange and keeps the older items verbatim; modelling it as the
whole-store replacement is never less strict (docs/presets/openai-agents.md; the adapter
decides both exactly).
"""

from __future__ import annotations

from typing import Any

from tailguard.pipeline.presets._base import Difference, Knob, Preset, Values

LIMIT = Knob("limit", "count_or_off", None,
             "SessionSettings(limit=N): the newest N items are read, compacted and kept; "
             "false/absent: all items")
THRESHOLD = Knob("compaction_threshold", "count", 10,
                 "the default should_trigger_compaction: compact at >= this many candidate items "
                 "(DEFAULT_COMPACTION_THRESHOLD; a custom hook is not expressible)")
FRESH = Knob("fresh_session_per_turn", "count", 0,
             "not a framework knob: 1 when the application creates the compaction session anew for "
             "every turn (so every compaction reads the newest `limit` items), 0 (default) when one "
             "object lives for the whole conversation: then the SDK's incremental candidate cache "
             "holds every item added since its first read and `limit` bounds nothing (see "
             "`limit_only_at_first_read`)", minimum=0, framework_knob=False)
WINDOW = Knob("window", "count_or_off", None, "the model's context window in tokens (overflow check)")
SUMMARY_TOKENS = Knob("summary_tokens", "count", 1000,
                      "not a framework knob: the size of the compaction item", framework_knob=False)
REMOVES = Knob("application_removes_items", "count", 1,
               "not a framework knob, read only by `tailguard import openai-agents`: 0 when the application "
               "never calls pop_item() or clear_session() on the store (the Runner over a SQLiteSession never "
               "does), so every row a SQLiteSession lost was deleted by a compaction; 1 (default) when it may",
               minimum=0, framework_knob=False)
AUTOMATIC = Knob("automatic_compaction", "count", 1,
                 "not a framework knob, read only by `tailguard import openai-agents`: 0 when only the "
                 "application's run_compaction() compacts (no Runner.run with this session), so a whole-store "
                 "replacement showed the newest `limit` items; 1 (default) when the Runner may compact "
                 "automatically, which sends the whole store when it replaces it",
                 minimum=0, framework_knob=False)
KNOBS = (LIMIT, THRESHOLD, FRESH, WINDOW, SUMMARY_TOKENS, REMOVES, AUTOMATIC)


def _translate(values: Values) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    stage: dict[str, Any] = {
        "kind": "compact",
        "trigger_unit": "messages", "trigger": values["compaction_threshold"],
        "keep_unit": "messages", "keep": 0,  # the whole store is replaced
        "summary_tokens": values["summary_tokens"],
        "summary": "message",  # the compaction item is an item the next window may not hold
        "input": "candidates",
    }
    if values["limit"] is not None and values["fresh_session_per_turn"]:
        stage.update(input_limit=values["limit"], input_limit_unit="messages")
    top: dict[str, Any] = {"window": values["window"]} if values["window"] else {}
    return top, [stage]


LIMIT_FIRST_READ = Difference(
    "limit_only_at_first_read",
    "`_ensure_compaction_candidates` reads the store once (`get_items()` under "
    "`SessionSettings.limit`) and caches it; `add_items` extends the cache with every new item and "
    "a compaction replaces it with the answer, so a long-lived object compacts everything added "
    "since its first read, not the newest `limit` items. Found by the differential test.",
    "with one object from the session's first item (`fresh_session_per_turn = 0`) the stage has no "
    "input limit and matches; an object created over a longer store sees only its newest `limit` "
    "items at its first compaction: set `fresh_session_per_turn = 1` (every compaction windowed, the "
    "stricter model) when the application re-creates it",
    "both settings are driven: one object for the run, and a new object every turn")
USER_MESSAGES_COUNTED = Difference(
    "trigger_counts_user_messages",
    "the default hook counts only candidate items (not user messages, not compaction items) in "
    "the window; the stage's trigger counts every message in the context.",
    "the model compacts at least as early as the SDK: each compaction it finds unsafe the SDK makes "
    "later or not at all in that session, so a model trace may need more appends in the SDK",
    "the harness steps the model on the SDK's own decision: it checks that whenever the SDK "
    "compacts the model's trigger holds too, and compares the compaction the SDK made")
USER_MESSAGES_KEPT = Difference(
    "user_messages_echoed",
    "the compact endpoint returns the user messages it was shown verbatim with the compaction "
    "item; the stage keeps nothing verbatim (`keep = 0`).",
    "the model loses the user messages to the summary where the SDK keeps them: floor findings "
    "are a superset (conservative)",
    "the harness's stub answers as the API documents; it checks the kept items are exactly the "
    "shown user messages")
AUTOMATIC_SUFFIX = Difference(
    "automatic_suffix_replacement",
    "when the Runner compacts automatically over a store with `_get_compaction_snapshot`, 0.24 "
    "replaces only the suffix matched to the latest model exchange and retains older items; the "
    "preset models `run_compaction()` with whole-store replacement.",
    "over such stores the SDK deletes less than the model says (conservative)",
    "the harness calls run_compaction() itself, as the application does")
SERVER_SIDE = Difference(
    "previous_response_id",
    "with `compaction_mode=\"previous_response_id\"` the server compacts its own copy and the "
    "client cannot know what was shown; the preset models the `input` mode.",
    "not checkable offline",
    "the harness uses compaction_mode=\"input\"")

PRESET = Preset(
    name="agents.OpenAIResponsesCompactionSession",
    summary="OpenAI Agents SDK compaction session: at 10 candidate items compact what it has read "
            "(the newest `limit` items at its first read) and replace the store with the answer",
    knobs=KNOBS,
    translate=_translate,
    validated_on=("openai-agents 0.24.0", "openai 3.57.0"),
    differential="tests/presets/test_openai_agents_preset.py",
    differences=(LIMIT_FIRST_READ, USER_MESSAGES_COUNTED, USER_MESSAGES_KEPT, AUTOMATIC_SUFFIX, SERVER_SIDE),
    doc="docs/presets/openai-agents.md",
)
