"""LangChain's approximate token count of a message list, summed from per-message counts where
that is provably the same number.

``SummarizationMiddleware`` counts tokens with ``count_tokens_approximately`` (langchain-core
1.x; through ``functools.partial(count_tokens_approximately, use_usage_metadata_scaling=True
[, chars_per_token=...])``), and ``trim_messages`` calls it on about eight prefixes of the same
messages per compaction. That function adds, for each message, ``ceil(chars / chars_per_token)``
plus ``extra_tokens_per_message`` (3.0) plus ``tokens_per_image`` (85) per image block to a float,
then (only with usage-metadata scaling, and only when an ``AIMessage`` in the list carries an
integer ``usage_metadata["total_tokens"]``) multiplies the total by a factor, and returns
``ceil`` of it. When every term is a whole number (the partial sets nothing but
``use_usage_metadata_scaling`` and ``chars_per_token``, so ``extra_tokens_per_message`` and
``tokens_per_image`` keep their whole defaults) and no message of the list can scale it, the
float sum of whole numbers below 2**53 is exact, so the count of a list is the sum of its
messages' counts, each one LangChain's own count of that message alone.

:meth:`SummingCounter.wrap` wraps the middleware's counter so: it sums the memoized count of each
message registered with it (the importer's messages, never changed), counted once with
LangChain's own call on ``[message]``; for any other list (a message not registered, such as
the clipped copy ``trim_messages`` makes, a message that could scale the count, a counter with
other settings) it calls LangChain's own counter on the whole list.
``tests/importers/test_langchain_tokens.py`` checks the equality against the real function.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["SummingCounter", "summable"]

#: what the partial may set and keep every per-message term a whole number
_WHOLE_KEYWORDS = frozenset({"use_usage_metadata_scaling", "chars_per_token"})


def summable(counter: Any) -> bool:
    """Whether ``counter``'s count of a list is the sum of its messages' counts when no message
    of it can scale the count: LangChain's ``count_tokens_approximately``, or a partial of it
    setting only ``use_usage_metadata_scaling`` and ``chars_per_token``."""
    from langchain_core.messages.utils import count_tokens_approximately

    if counter is count_tokens_approximately:
        return True
    return (isinstance(counter, functools.partial) and counter.func is count_tokens_approximately
            and not counter.args and set(counter.keywords) <= _WHOLE_KEYWORDS)


class SummingCounter:
    """The registry and memo of :func:`summing_counter` (one per import; messages are only read)."""

    def __init__(self) -> None:
        from langchain_core.messages import AIMessage, BaseMessage

        self._ai, self._base = AIMessage, BaseMessage
        #: id(message) -> (message, {counter's id: count}); the message is held so its id stays its own
        self.known: dict[int, tuple[Any, dict[int, int]]] = {}

    def register(self, m: Any) -> None:
        """Let ``m`` be summed: it is a plain LangChain message no one changes, that cannot scale."""
        if isinstance(m, self._base) and not self.scales(m):
            self.known.setdefault(id(m), (m, {}))

    def scales(self, m: Any) -> bool:
        """Whether ``m`` could make ``count_tokens_approximately`` scale a list's count (an
        ``AIMessage`` with an integer ``usage_metadata["total_tokens"]``; any usage is taken so)."""
        return isinstance(m, self._ai) and bool(m.usage_metadata)  # (any usage at all: the safe side)

    def wrap(self, counter: Callable[..., int]) -> Callable[..., int]:
        """``counter`` (the middleware's own), summing registered messages where that is exact."""
        if not summable(counter):
            return counter
        known, key = self.known, id(counter)

        def count(messages: Iterable[Any]) -> int:
            msgs = messages if isinstance(messages, list) else list(messages)
            total = 0
            for m in msgs:
                found = known.get(id(m))
                if found is None or found[0] is not m:
                    return int(counter(msgs))  # a message not registered: LangChain's own count
                memo = found[1]
                n = memo.get(key)
                if n is None:
                    n = memo[key] = int(counter([m]))
                total += n
            return total

        return count

