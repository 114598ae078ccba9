"""Oracles: independent restatements the tests and contracts compare the real code against.

The naive per-offset reference, the seed's guard transcribed as written, and the PEP 316
contracts CrossHair checks. Nothing on the runtime path imports them.
"""
