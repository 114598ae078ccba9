"""The runtime guard an orchestrator calls: the ledger, its event log, escalation, the seed API.

Everything here is standard library only (a test imports each module in a process that refuses
any other import): it is on the orchestrator's hot path. The stable names are re-exported by
the package face (``from tailguard import Ledger``).
"""
