"""Stable import path of the runtime ledger: ``from tailguard.ledger import Ledger``.

The ledger lives in :mod:`tailguard.runtime.ledger`; this module only re-exports its public
names so code written against earlier releases keeps working.
"""

from __future__ import annotations

from tailguard.runtime.ledger import PROFILES, Ledger, LedgerCore, LogFailedError, TornLineWarning

__all__ = ["PROFILES", "Ledger", "LedgerCore", "LogFailedError", "TornLineWarning"]
