"""Google ADK's ``EventsCompactionConfig`` against the ``google_adk.EventsCompactionConfig``
preset, and the adapter (``GuardedCompaction``) on the same knobs.

ADK runs as installed (:mod:`tailguard.doctor.drivers.adk_app`): the real ``Runner`` and
``App`` with an ``EventsCompactionConfig``, the real ``LlmEventSummarizer`` on a recording fake
model, an ``InMemorySessionService``, and an agent on a fake ``BaseLlm`` that plays a script
(text answers, calls of a ``probe`` tool that ADK runs). Every raw event carries a tag
``[e<i>]``. After the run the driver reads the session's events: each compaction event, where it
was written (after which raw event), what left the context (``_process_compaction_events``
before and after it), what the summarizer was shown (its prompt), what stayed, and compares them
with the preset's model stepped turn by turn. Then the marker oracle: every tag is in the final
context, in a summary there (what it was shown, following the summaries it was shown), or lost.

Declared differences, as declared: ``summaries_accumulate`` and ``overlap_reshown`` (sliding
window: checked, see :func:`compare_sliding`); ``worth_compacting`` (the driver's summaries are
small, so ADK compacts whenever the model does; a mismatch otherwise). The adapter runs token
sessions with the floor at ``event_retention_size`` (which ``check-config`` finds safe): it must
allow every compaction.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import random
from typing import Any

from google.adk.apps.llm_event_summarizer import LlmEventSummarizer

from tailguard.adapters.google_adk import GuardedCompaction
from tailguard.doctor.drivers import adk_app as adk
from tailguard.doctor.drivers.adk_app import Step
from tailguard.doctor.harness import Case, Mismatch, ModelRun, Turn
from tailguard.pipeline.policy import Policy, parse_policy
from tailguard.pipeline.presets.google_adk import PRESET
from tailguard.runtime.seed_api import UnrecoverableCompactionError

__all__ = ["RealCompaction", "cases", "compare_sliding", "compare_tokens", "policy", "real_compactions",
           "run_sliding", "run_tokens"]


def policy(knobs: str, *, floor: int = 0, mpt: tuple[int, int] = (1, 1), max_tokens: int = 400,
           keep: int | None = None) -> Policy:
    text = (f'name = "differential"\nturn_tokens = [1, {max_tokens}]\nmessages_per_turn = [{mpt[0]}, {mpt[1]}]\n'
            f'floor = {floor}\nfloor_unit = "messages"\n[framework]\nname = "{PRESET.name}"\n{knobs}\n')
    out = parse_policy(text, "differential.toml")
    if keep is not None:  # a deliberately wrong translation
        out = out.with_knob("keep", keep, stage=0)
    return out


@dataclasses.dataclass
class RealCompaction:
    after: int  # the raw event it was written after
    deleted: list[int]  # raw events that left the context
    shown: list[int]  # raw events the summarizer's prompt holds
    kept: list[int]  # raw events in the context after it
    summary_shown: bool  # an earlier summary in the prompt
    dropped: list[int]  # summaries that left the context
    prompt: str


def real_compactions(events: list[Any], prompts: list[str]) -> list[RealCompaction]:
    out: list[RealCompaction] = []
    raw_seen = 0
    for p, e in enumerate(events):
        if not (e.actions and e.actions.compaction):
            raw_seen += 1
            continue
        k = len(out)
        before_raw, before_s = adk.context(events[:p])
        after_raw, after_s = adk.context(events[:p + 1])
        prompt = prompts[k]
        out.append(RealCompaction(
            raw_seen - 1, sorted(set(before_raw) - set(after_raw)),
            sorted({int(t) for t in adk.TAG.findall(prompt)}), sorted(after_raw),
            bool(adk.SUMMARY_TAG.search(prompt)), sorted(set(before_s) - set(after_s)), prompt))
    if len(out) != len(prompts):
        raise Mismatch(f"{len(prompts)} summarizer calls, {len(out)} compaction events written")
    return out


# -- token threshold: a turn is an event ---------------------------------------------------------


async def run_tokens(sizes: list[int], threshold: int, retention: int, summary_tokens: int,
                     guard_floor: int | None = None) -> tuple[list[Any], list[str]]:
    """ADK over ``sizes`` (a prompt and an answer per invocation); with ``guard_floor`` the
    adapter (``GuardedCompaction``, that floor, ``on_refuse="halt"``) is the summarizer."""
    config = {"token_threshold": threshold, "event_retention_size": retention}
    if guard_floor is None:
        app = await adk.build(config, summary_tokens=summary_tokens)
    else:
        summary = adk.SummaryModel(summary_tokens=summary_tokens, prompts=[])
        guard = GuardedCompaction(LlmEventSummarizer(llm=summary), recovery_floor_span=guard_floor,
                                  on_refuse="halt", log=io.StringIO())
        app = await adk.build(config, summarizer=guard, plugins=[guard], summary_model=summary)
    for i in range(0, len(sizes), 2):
        await app.invoke(sizes[i], [Step(sizes[i + 1])])
    return await app.session_events(), app.summary_model.prompts


def compare_tokens(sizes: list[int], threshold: int, retention: int, summary_tokens: int = 10,
                   *, keep: int | None = None) -> int:
    events, prompts = adk.run(run_tokens(sizes, threshold, retention, summary_tokens))
    real = {c.after: c for c in real_compactions(events, prompts)}
    sim = ModelRun(policy(f"token_threshold = {threshold}\nevent_retention_size = {retention}\n"
                          f"summary_tokens = {summary_tokens}", keep=keep))
    compared = 0
    for i, size in enumerate(sizes):
        had_summary = sim.state.summary
        predicted, _ = sim.append(Turn("human", (size,)))
        got = real.get(i)
        where = f"event {i} (sizes {sizes}, threshold {threshold}, retention {retention})"
        if got is None and predicted is None:
            continue
        if got is None or predicted is None:
            raise Mismatch(f"{where}: ADK compacted {got and got.deleted}, the model {predicted and predicted.deleted}",
                           compared + 1)
        if (tuple(got.deleted), tuple(got.shown), tuple(got.kept)) != (predicted.deleted, predicted.shown,
                                                                        predicted.kept):
            raise Mismatch(f"{where}: ADK deleted {got.deleted}, showed {got.shown}, kept {got.kept}; the model "
                           f"deleted {predicted.deleted}, showed {predicted.shown}, kept {predicted.kept}",
                           compared + 1)
        if got.summary_shown is not had_summary:  # summary = "separate": the earlier one always shown
            raise Mismatch(f"{where}: earlier summary shown: ADK {got.summary_shown}, the model {had_summary}",
                           compared + 1)
        compared += 1
    gone = adk.lost(events, prompts)
    if gone:
        raise Mismatch(f"markers lost on ADK where the model finds no hole: {sorted(gone)}")
    return compared


# -- sliding window: a turn is an invocation -------------------------------------------------------


async def run_sliding(shapes: list[int], interval: int, overlap: int) -> tuple[list[Any], list[str], list[list[int]]]:
    """``shapes[k]``: tool rounds of invocation k. Returns the events, the prompts and each
    invocation's raw tags."""
    app = await adk.build({"compaction_interval": interval, "overlap_size": overlap})
    turns: list[list[int]] = []
    for rounds in shapes:
        start = app.raw
        await app.invoke(6, [*(Step(1, call=5) for _ in range(rounds)), Step(5)])
        turns.append(list(range(start, app.raw)))
    return await app.session_events(), app.summary_model.prompts, turns


def compare_sliding(shapes: list[int], interval: int, overlap: int, *, keep: int | None = None) -> int:
    events, prompts, turns = adk.run(run_sliding(shapes, interval, overlap))
    turn_of = {t: k for k, ts in enumerate(turns) for t in ts}
    real = {turn_of[c.after]: c for c in real_compactions(events, prompts)}
    if len(real) != sum(1 for c in real_compactions(events, prompts)):
        raise Mismatch("two compactions after one invocation")
    most = max(2 + 2 * r for r in shapes)
    sim = ModelRun(policy(f"compaction_interval = {interval}\noverlap_size = {overlap}\nsummary_tokens = 10",
                          mpt=(2, max(most, 2)), max_tokens=249, keep=keep))
    compared = 0
    for k, rounds in enumerate(shapes):
        predicted, _ = sim.append(Turn("tools", (1,) * (2 + 2 * rounds)))
        got = real.get(k)
        where = f"invocation {k} (shapes {shapes}, interval {interval}, overlap {overlap})"
        if got is None and predicted is None:
            continue
        if got is None or predicted is None:
            raise Mismatch(f"{where}: ADK compacted {got and got.deleted}, the model {predicted and predicted.deleted}",
                           compared + 1)
        if got.after != turns[k][-1]:
            raise Mismatch(f"{where}: ADK compacted after event {got.after}, not at the invocation's end", compared + 1)
        deleted = sorted({turn_of[t] for t in got.deleted})
        if any(set(turns[j]) - set(got.deleted) for j in deleted):
            raise Mismatch(f"{where}: ADK split an invocation: {got.deleted}", compared + 1)
        shown = sorted(j for j in range(len(turns)) if set(turns[j]) <= set(got.shown))
        kept = sorted({turn_of[t] for t in got.kept})
        if (tuple(deleted), tuple(j for j in shown if j in deleted), tuple(kept)) != (
                predicted.deleted, predicted.shown, predicted.kept):
            raise Mismatch(f"{where}: ADK deleted {deleted}, showed {shown}, kept {kept}; the model deleted "
                           f"{predicted.deleted}, showed {predicted.shown}, kept {predicted.kept}", compared + 1)
        # overlap_reshown: the re-read invocations are the overlap_size ones before the new ones
        first_new = deleted[0]
        reread = [j for j in shown if j not in deleted]
        if reread != list(range(max(0, first_new - overlap), first_new)):
            raise Mismatch(f"{where}: ADK re-read invocations {reread} (overlap {overlap}, first new {first_new})",
                           compared + 1)
        # summaries_accumulate: no earlier summary is shown; one that leaves is contained in the
        # new range, whose raw events the new summary was shown
        if got.summary_shown:
            raise Mismatch(f"{where}: the sliding window showed an earlier summary", compared + 1)
        for s in got.dropped:
            held = {int(t) for t in adk.TAG.findall(prompts[s])}
            if not held <= set(got.shown):
                raise Mismatch(f"{where}: summary {s} left the context, its events {sorted(held - set(got.shown))} "
                               "not shown again", compared + 1)
        compared += 1
    gone = adk.lost(events, prompts)
    if gone:
        raise Mismatch(f"markers lost on ADK where the model finds no hole: {sorted(gone)}")
    return compared


def adapter_allows(sizes: list[int], threshold: int, retention: int) -> int:
    """ADK with the adapter, floor ``retention``: no refusal; returns the compactions."""
    try:
        events, prompts = adk.run(run_tokens(sizes, threshold, retention, 10, guard_floor=retention))
    except Exception as exc:
        cause: BaseException | None = exc
        while cause is not None and not isinstance(cause, UnrecoverableCompactionError):
            cause = cause.__cause__ or cause.__context__
        if cause is None:
            raise
        raise Mismatch(f"the adapter refused a compaction of a session the preset finds safe with floor "
                       f"{retention}: {cause}") from None
    return len(real_compactions(events, prompts))


def random_token_session(rng: random.Random, max_events: int = 24) -> tuple[list[int], int, int]:
    """As the differential test draws them: sizes of 2n events, threshold, retention."""
    n = 2 * rng.randint(1, max_events // 2)
    return [rng.randint(3, 40) for _ in range(n)], rng.randint(20, 200), rng.randint(0, 6)


def cases(rng: random.Random, sessions: int) -> list[Case]:
    out = [Case("preset", "tokens: sizes [10, 5] * 12, threshold 40, retention 2",
                lambda: compare_tokens([10, 5] * 12, 40, 2)),
           Case("preset", "sliding: shapes [0, 1, 0, 2, 0, 0, 1, 0, 0], interval 3, overlap 1",
                lambda: compare_sliding([0, 1, 0, 2, 0, 0, 1, 0, 0], 3, 1))]
    for i in range(sessions - 2):
        if i % 2 == 0:
            sizes, threshold, retention = random_token_session(rng)
            out.append(Case("preset", f"tokens: sizes {sizes}, threshold {threshold}, retention {retention}",
                            functools.partial(compare_tokens, sizes, threshold, retention)))
        else:
            shapes = [rng.randint(0, 2) for _ in range(rng.randint(1, 12))]
            interval, overlap = rng.randint(1, 4), rng.randint(0, 4)
            out.append(Case("preset", f"sliding: shapes {shapes}, interval {interval}, overlap {overlap}",
                            functools.partial(compare_sliding, shapes, interval, overlap)))
    sizes, _, retention = random_token_session(rng)
    sizes, retention = sizes + [40, 3, 25, 30] * 4, max(retention, 1)
    out.append(Case("adapter", f"tokens: sizes {sizes}, threshold 100, retention {retention}, floor {retention}",
                    lambda: adapter_allows(sizes, 100, retention)))
    return out
