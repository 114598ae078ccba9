"""LlamaIndex's chat memories (brief 6c): ``Memory`` and ``ChatSummaryMemoryBuffer``.

Read from ``llama_index/core/memory/memory.py``, ``chat_summary_memory_buffer.py`` and
``memory_blocks/`` of llama-index-core 0.14.25.

**``Memory``** keeps the session's messages in its SQL store (``SQLAlchemyChatStore``, a row per
message with a status). After every ``put``/``put_messages``, ``_manage_queue`` counts the
active messages' tokens (``_estimate_token_count``: the tokenizer over each text block, plus
``str(additional_kwargs)``) and, while they exceed ``token_limit * chat_history_token_ratio``,
*flushes*: it pops the oldest messages until at least ``token_flush_size`` tokens are flushed,
then more until the oldest remaining message is a user message (a turn: the user's message
and every reply after it), never the last message (and, when only a non-user message would
remain, gives the newest whole turn back). The flushed messages are *archived* (status
``archived``: still rows of the store, but no ``get()`` ever returns them again) and handed to
every memory block (``block.aput(messages, from_short_term_memory=True)``). ``get()`` returns
the active messages and each block's content (in the system message, or as messages).

What a block does with a flush:

- ``StaticMemoryBlock``: nothing (``_aput`` is a no-op). No block at all (``memory_blocks``
  defaults to ``[]``): nothing either. The flushed messages left the context unseen: a
  **truncation** (every flushed turn a hole).
- ``FactExtractionMemoryBlock``: its LLM is shown the flushed messages whole and the existing
  facts (``achat([*messages, *prompt])``), and the facts it writes are shown by every later
  ``get()`` (priority 0: never truncated). A rolling summary: a **compaction**
  (``summary = "separate"``, the candidates all shown). With a priority other than 0,
  ``get()`` drops the whole fact block when the context is over ``token_limit``
  (``BaseMemoryBlock.atruncate`` returns None), so its facts are no coverage: a truncation.
- ``VectorMemoryBlock``: stores the flushed text (text blocks only, wrapped in
  ``<message role=...>``) in a vector store and ``get()`` shows the ``similarity_top_k``
  batches nearest to the newest messages: no flushed message is sure to come back, and none
  comes back byte-exact. A truncation (declared: ``vector_retrieval``).
- ``accept_short_term_memory = false``: the block takes no flush; as none.

**``ChatSummaryMemoryBuffer``** (deprecated for ``Memory``, still shipped) rewrites its chat
store at every ``get()``: counting back from the newest message (``len(tokenizer(str(content)))``
each), it keeps the messages while their sum stays within ``token_limit`` (less
``initial_token_count`` with ``count_initial_tokens``), stops at the first that does not fit,
moves leading assistant and tool messages of the kept part to the rest (so the kept part is
whole turns), and, with an ``llm``, replaces the rest by one system message: the LLM's summary
of a transcript of it (an earlier summary, the oldest message, included; a lone system message
is kept as it is). Without an ``llm`` (``from_defaults``' default) the rest is deleted: a
truncation to the newest whole turns within ``token_limit``.
"""

from __future__ import annotations

from typing import Any

from tailguard.base.args import is_int
from tailguard.pipeline.presets._base import Difference, Fail, Knob, Preset, Values

#: ``memory.DEFAULT_TOKEN_LIMIT`` and ``DEFAULT_FLUSH_SIZE``.
MEMORY_TOKEN_LIMIT = 30000
MEMORY_FLUSH_SIZE = int(MEMORY_TOKEN_LIMIT * 0.1)
#: ``chat_summary_memory_buffer.DEFAULT_TOKEN_LIMIT`` (no llm) and ``DEFAULT_TOKEN_LIMIT_RATIO``.
SUMMARY_TOKEN_LIMIT = 2000
SUMMARY_TOKEN_LIMIT_RATIO = 0.75
BLOCK_KINDS = ("static", "fact", "vector")
BLOCK_KEYS = ("kind", "name", "priority", "accept_short_term_memory")


def _read_blocks(value: Any, fail: Fail, window: int) -> tuple[dict[str, Any], ...]:
    """``memory_blocks``: a list of tables ``{kind = "static"|"fact"|"vector", priority = 0,
    accept_short_term_memory = true, name = ...}`` (BaseMemoryBlock's fields and defaults)."""
    if not isinstance(value, list):
        raise fail("memory_blocks", f"expected a list of block tables ({{kind = \"fact\"}}, ...), got {value!r}")
    out: list[dict[str, Any]] = []
    names: set[str] = set()
    for i, block in enumerate(value):
        where = f"memory_blocks: block {i}"
        if not isinstance(block, dict):
            raise fail("memory_blocks", f"{where}: expected a table, got {block!r}")
        unknown = [k for k in block if k not in BLOCK_KEYS]
        if unknown:
            raise fail("memory_blocks", f"{where}: unknown key {unknown[0]!r} (keys: {', '.join(BLOCK_KEYS)})")
        kind = block.get("kind")
        if kind not in BLOCK_KINDS:
            raise fail("memory_blocks", f"{where}: kind must be one of {', '.join(map(repr, BLOCK_KINDS))} "
                                        f"(StaticMemoryBlock, FactExtractionMemoryBlock, VectorMemoryBlock), "
                                        f"got {kind!r}")
        priority = block.get("priority", 0)
        if not is_int(priority):
            raise fail("memory_blocks", f"{where}: priority must be an integer, got {priority!r}")
        accept = block.get("accept_short_term_memory", True)
        if not isinstance(accept, bool):
            raise fail("memory_blocks", f"{where}: accept_short_term_memory must be true or false, got {accept!r}")
        default_name = {"static": "StaticContent", "fact": "ExtractedFacts", "vector": "RetrievedMessages"}[kind]
        name = block.get("name", default_name)
        if not isinstance(name, str) or name in names:
            raise fail("memory_blocks", f"{where}: name {name!r}: all memory blocks must have unique names "
                                        "(Memory's ValueError)")
        names.add(name)
        out.append({"kind": kind, "name": name, "priority": priority, "accept_short_term_memory": accept})
    return tuple(out)


def _read_bool(name: str) -> Any:
    def read(value: Any, fail: Fail, window: int) -> bool:
        if not isinstance(value, bool):
            raise fail(name, f"expected true or false, got {value!r}")
        return value
    return read


def _read_ratio(value: Any, fail: Fail, window: int) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise fail("chat_history_token_ratio", f"expected a number in (0, 1], got {value!r}")
    return float(value)


# -- Memory -------------------------------------------------------------------------------

TOKEN_LIMIT = Knob("token_limit", "count", MEMORY_TOKEN_LIMIT,
                   "the memory's overall token limit (Memory.token_limit)")
RATIO = Knob("chat_history_token_ratio", "settings", 0.7,
             "the short-term history flushes when its tokens exceed token_limit * this", read=_read_ratio)
FLUSH = Knob("token_flush_size", "count", MEMORY_FLUSH_SIZE,
             "a flush pops the oldest messages until at least this many tokens left (then to a turn's "
             "start); a value above token_limit becomes int(token_limit * 0.1) (Memory's validator)")
BLOCKS = Knob("memory_blocks", "settings", (),
              "the blocks flushed messages go to: a list of {kind = \"static\"|\"fact\"|\"vector\", priority = 0, "
              "accept_short_term_memory = true}; default none", read=_read_blocks)
MEMORY_KNOBS = (TOKEN_LIMIT, RATIO, FLUSH, BLOCKS)


def history_limit(values: Values) -> int:
    """The largest active history that does not flush: ``tokens > token_limit * ratio`` flushes,
    and token counts are integers."""
    return int(values["token_limit"] * values["chat_history_token_ratio"])


def flush_size(values: Values) -> int:
    """``token_flush_size`` as Memory's validator leaves it."""
    size: int = values["token_flush_size"]
    return int(values["token_limit"] * 0.1) if size > values["token_limit"] else size


def covering_block(values: Values) -> dict[str, Any] | None:
    """The block whose content covers a flush: a fact block that takes flushes and is never
    truncated by ``get()`` (priority 0); None when no block does."""
    return next((b for b in values["memory_blocks"] if b["kind"] == "fact" and b["accept_short_term_memory"]
                 and b["priority"] == 0), None)


def _memory_translate(values: Values) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    limit = history_limit(values)
    if covering_block(values) is None:
        return {}, [{"kind": "truncate", "unit": "tokens", "limit": limit}]
    return {}, [{
        "kind": "compact",
        "trigger_unit": "tokens", "trigger": limit + 1,
        # floor = 0 only (check_session): which turns a flush keeps does not decide a verdict
        "keep_unit": "tokens", "keep": max(0, limit - flush_size(values)),
        # the facts are in the system message, outside the history the flush counts
        "summary_tokens": 0,
        "summary": "separate",  # the existing facts are in the extraction prompt
        "input": "candidates",
    }]


def check_memory_session(values: Values, data: dict[str, Any], fail: Fail) -> None:
    """The sessions the translation is exact for (brief 6d: refuse by name, never a false safe)."""
    limit = history_limit(values)
    tt = data.get("turn_tokens")
    if isinstance(tt, list) and len(tt) == 2 and is_int(tt[1]) and tt[1] > limit:
        raise fail("turn_tokens", f"a turn of up to {tt[1]} tokens can exceed the history budget "
                                  f"(token_limit * chat_history_token_ratio = {limit}); Memory then keeps the "
                                  "newest turn whole over the budget, which the truncate stage would drop: "
                                  f"bound turn_tokens to {limit}, or guard it at run time "
                                  "(tailguard.adapters.llamaindex)")
    floor = data.get("floor")
    if covering_block(values) is not None and is_int(floor) and floor > 0:
        raise fail("floor", "with a fact block a flush keeps whatever its batches of token_flush_size leave "
                            "(whole turns, at least one), which no keep of the stages says; nothing flushed is "
                            "lost (the fact LLM is shown it whole), so check it with floor = 0, and guard the "
                            "floor at run time (tailguard.adapters.llamaindex)")


FLUSH_BATCHES = Difference(
    "flush_batches",
    "a flush pops the oldest turns until at least `token_flush_size` tokens left, repeating while the "
    "history is over its budget; the truncate stage drops the oldest turns only until it fits.",
    "the first loss comes at the same append, and the model's dropped turns are the oldest of the real "
    "flush (it drops as many or more); a finding's hole is a subset of what Memory loses",
    "the harness checks that the first flush is at the model's first truncation and every model hole is "
    "flushed by Memory, oldest first, in whole turns")
VECTOR_RETRIEVAL = Difference(
    "vector_retrieval",
    "VectorMemoryBlock keeps the flushed text in a vector store and `get()` shows only the "
    "`similarity_top_k` batches nearest the newest messages (text blocks only, re-wrapped).",
    "counted as no coverage: a flush into it is a hole (it may come back; nothing says it will)",
    "the harness drives a VectorMemoryBlock (MockEmbedding; a SimpleVectorStore, which keeps no text) and "
    "checks its flushes are where the truncate stage drops; what retrieval would bring back is not judged")
STATE_IN_PROCESS = Difference(
    "facts_in_process",
    "FactExtractionMemoryBlock keeps its facts in the Python object, not in the SQL store: a process that "
    "builds a new Memory over the same store starts with no facts.",
    "a restart drops the coverage the facts held; the stages keep one process. The adapter detects it "
    "(the facts' digest is in its state) and records the summary evicted",
    "tests/adapters/test_llamaindex_adapter.py restarts over a SQLite file")
TOKEN_ESTIMATE = Difference(
    "token_estimate",
    "Memory counts text blocks with its tokenizer and adds `str(additional_kwargs)`; images, audio, video "
    "and documents count fixed estimates (256, 256, 256, 2048).",
    "the stages count turn_tokens as given: give turn sizes as Memory counts them",
    "the harness uses tokenizer_fn= (one token per word) and plain text messages")

MEMORY = Preset(
    name="llamaindex.Memory",
    summary="LlamaIndex Memory: the short-term history flushes its oldest turns past token_limit * "
            "chat_history_token_ratio to its memory blocks (none by default: a truncation; a fact block: "
            "a rolling summary)",
    knobs=MEMORY_KNOBS,
    translate=_memory_translate,
    validated_on=("llama-index-core 0.14.25",),
    differential="tests/presets/test_llamaindex_preset.py",
    differences=(FLUSH_BATCHES, VECTOR_RETRIEVAL, STATE_IN_PROCESS, TOKEN_ESTIMATE),
    doc="docs/presets/llamaindex.md",
    aliases=("llama_index.core.memory.Memory",),
)


# -- ChatSummaryMemoryBuffer ---------------------------------------------------------------

BUFFER_KNOBS = (
    Knob("token_limit", "count_or_off", None,
         "the newest messages within this many tokens stay verbatim; default: int(context_window * 0.75) "
         "with an llm, else 2000 (from_defaults)",
         default_text="int(context_window * 0.75) with llm, else 2000"),
    Knob("llm", "settings", False,
         "whether an llm summarizes what does not fit (from_defaults' llm=None: it is deleted)",
         read=_read_bool("llm")),
    Knob("context_window", "count_or_off", None,
         "the llm's metadata.context_window (for the default token_limit)"),
    Knob("count_initial_tokens", "settings", False,
         "count get(initial_token_count=...) against token_limit", read=_read_bool("count_initial_tokens")),
    Knob("initial_token_count", "count", 0,
         "not a framework knob: get()'s initial_token_count (the system prompt), counted with "
         "count_initial_tokens", minimum=0, framework_knob=False),
    Knob("summary_tokens", "count", 256,
         "not a framework knob: the summary message's size in tokens", framework_knob=False),
)


def _buffer_resolve(values: Values, given: tuple[str, ...]) -> Values:
    out = dict(values)
    if out["token_limit"] is None:
        if out["llm"] and out["context_window"] is not None:
            out["token_limit"] = int(out["context_window"] * SUMMARY_TOKEN_LIMIT_RATIO)
        else:
            out["token_limit"] = SUMMARY_TOKEN_LIMIT
    return out


def _buffer_check(values: Values, fail: Fail) -> None:
    if values["count_initial_tokens"] and values["initial_token_count"] > values["token_limit"]:
        raise fail("initial_token_count", f"{values['initial_token_count']} exceeds token_limit "
                                          f"{values['token_limit']} (ChatSummaryMemoryBuffer.get raises ValueError)")


def buffer_keep(values: Values) -> int:
    """The tokens the kept messages may hold at a ``get()``."""
    limit: int = values["token_limit"]
    return limit - values["initial_token_count"] if values["count_initial_tokens"] else limit


def _buffer_translate(values: Values) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    keep = buffer_keep(values)
    if not values["llm"]:
        # newest whole turns within the budget: the truncate stage keeps exactly that suffix
        return {}, [{"kind": "truncate", "unit": "tokens", "limit": keep}]
    return {}, [{
        "kind": "compact",
        "trigger_unit": "tokens", "trigger": keep + 1,
        "keep_unit": "tokens", "keep": keep,
        "summary_tokens": values["summary_tokens"],
        "summary": "message",  # the earlier summary is the oldest message of the transcript
        "input": "candidates",
    }]



SUMMARY_ALONE = Difference(
    "summary_alone",
    "when every turn fits but the earlier summary does not, ChatSummaryMemoryBuffer keeps the summary as it "
    "is (a lone system message is not re-summarized); the stage, triggered, re-summarizes it alone.",
    "none: nothing leaves either way",
    "the harness treats a model compaction without candidates as the buffer's no-op")
TEXT_ONLY = Difference(
    "text_only_transcript",
    "`_get_prompt_to_summarize` shows `role: content` of each message whose content is a string; a message "
    "without text (tool calls in ToolCallBlocks, images) is left out of the transcript.",
    "such a message is lost at its compaction; the preset judges text messages only (the adapter checks "
    "each message is in the transcript)",
    "the harness's messages are text")
GET_TIMING = Difference(
    "get_timing",
    "the buffer compacts at `get()`, which an agent calls before each model call (also inside a turn); the "
    "stages run after each turn.",
    "a get() inside a turn counts the partial turn as a turn; the kept part is still whole turns",
    "the harness calls get() after each turn")
BUFFER_TOKENS = Difference(
    "buffer_token_count",
    "each message counts `len(tokenizer_fn(str(message.content)))`; a message without text counts the "
    "tokens of 'None'.",
    "give turn sizes as the buffer counts them",
    "the harness uses tokenizer_fn= (one token per word)")

BUFFER = Preset(
    name="llamaindex.ChatSummaryMemoryBuffer",
    summary="LlamaIndex ChatSummaryMemoryBuffer: at get(), the newest whole turns within token_limit stay; the "
            "rest is summarized by the llm (earlier summary included) or, without one (the default), deleted",
    knobs=BUFFER_KNOBS,
    translate=_buffer_translate,
    check=_buffer_check,
    resolve=_buffer_resolve,
    validated_on=("llama-index-core 0.14.25",),
    differential="tests/presets/test_llamaindex_preset.py",
    differences=(SUMMARY_ALONE, TEXT_ONLY, GET_TIMING, BUFFER_TOKENS),
    doc="docs/presets/llamaindex.md",
    aliases=("llama_index.core.memory.ChatSummaryMemoryBuffer",),
)

PRESETS = (MEMORY, BUFFER)


def check_session(preset: Preset, values: Values, data: dict[str, Any], fail: Fail) -> None:
    """The session checks of either preset (called by the registry with the parsed policy)."""
    if preset is MEMORY:
        check_memory_session(values, data, fail)


__all__ = ["BUFFER", "MEMORY", "PRESETS", "buffer_keep", "check_session", "covering_block",
           "flush_size", "history_limit"]
