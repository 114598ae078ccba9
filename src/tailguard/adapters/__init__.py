"""Framework adapters: the guard inside LangChain, the OpenAI Agents SDK and langmem.

One module per framework, each a thin translation of that framework's compaction into ledger
calls (:class:`tailguard.runtime.ledger.Ledger`, profile ``partitioned``):

- :mod:`tailguard.adapters.langchain`: ``GuardedSummarizationMiddleware`` and
  ``spill_reader_tool`` (``pip install 'tailguard[langchain]'``);
- :mod:`tailguard.adapters.openai_agents`: ``GuardedResponsesCompactionSession``
  (``pip install 'tailguard[openai-agents]'``);
- :mod:`tailguard.adapters.langmem`: ``GuardedSummarizer`` for ``summarize_messages``
  (``pip install 'tailguard[langmem]'``).

This package imports no framework: each framework module imports its own, and raises
``ImportError`` naming the extra when it is missing. The shared pieces (offsets by item key,
the decision and its three outcomes, the spill payload) are standard library only.
"""

from __future__ import annotations

__all__: list[str] = []
