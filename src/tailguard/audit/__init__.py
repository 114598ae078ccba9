"""Auditing what ran: replay an event log, and report it as text, HTML or a fleet of records.

Reads logs the runtime wrote (or importers produced) and judges them with the runtime's own core.
"""
