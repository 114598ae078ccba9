"""Framework adapters: the guard inside LangChain, the OpenAI Agents SDK and langmem.

One module per framework, each a thin translation of that framework's compaction into ledger
calls (:class:`tailguard.runtime.ledger.Ledger`, profile ``partitioned``):

- :mod:`tailguard.adapters.langchain`: ``GuardedSummarizationMiddleware`` and
  ``spill_reader_tool`` (``pip install 'tailguard[langchain]'``);
- :mod:`tailguard.adapters.openai_agents`: ``GuardedResponsesCompactionSession``
  (``pip install 'tailguard[openai-agents]'``);
- :mod:`tailguard.adapters.langmem`: ``GuardedSummarizer`` for ``summarize_messages`` and
  ``GuardedSummarizationNode`` for ``SummarizationNode`` (``pip install 'tailguard[langmem]'``);
- :mod:`tailguard.adapters.openhands`: ``GuardedCondenser`` around the OpenHands SDK's
  condensers and ``GuardedAgent`` (``pip install 'tailguard[openhands]'``, its own Python);
- :mod:`tailguard.adapters.autogen`: ``GuardedChatCompletionContext`` around AutoGen's model
  contexts (``pip install 'tailguard[autogen]'``).
- :mod:`tailguard.adapters.strands`: ``GuardedConversationManager`` around a Strands Agents
  conversation manager (``pip install 'tailguard[strands]'``, not beside google-adk).

Every adapter takes the guard's options as one :class:`GuardOptions` (``options=``; the
keywords each adapter documents build one), and takes the same named steps for a compaction
(observe, plan, resolve, confirm, apply: :mod:`tailguard.adapters._guard`).

This package imports no framework: each framework module imports its own, and raises
``ImportError`` naming the extra (and its ``SUPPORTED`` versions, the preset's
``validated_on``) when it is missing. The shared pieces (the options, offsets by item key, the
decision and its three outcomes, the spill payload, the session machinery of adapters that
serve many sessions: :mod:`tailguard.adapters._sessions`) are standard library only.
"""

from __future__ import annotations

from tailguard.adapters._guard import GuardOptions, OnRefuse

__all__ = ["GuardOptions", "OnRefuse"]
