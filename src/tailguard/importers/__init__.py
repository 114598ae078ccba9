"""Importers (brief 10): what a framework persisted, as the normative event log.

``tailguard import FORMAT SOURCE...`` writes the logs; ``tailguard audit --from FORMAT
SOURCE...`` judges them with the audit that reads every log (text, JSON, ``--html``, fleet
mode, ``--engine dask``). One module per format; each imports its framework lazily and says
which versions it was validated on (``VALIDATED_ON``). What a record does not say is computed
with the framework's own rule from ``--knobs`` (:mod:`tailguard.importers.knobs`), or
recorded as adopted (unverified), never assumed covered.

Formats: ``langgraph`` (:mod:`tailguard.importers.langgraph`), ``openhands``
(:mod:`tailguard.importers.openhands`), ``openai-agents`` (:mod:`tailguard.importers.openai_agents`).
"""

from __future__ import annotations

from tailguard.importers.sessions import FORMATS, SessionRef, expand, import_session, knobs_for

__all__ = ["FORMATS", "SessionRef", "expand", "import_session", "knobs_for"]
