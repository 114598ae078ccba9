"""Offline policy checking (``tailguard check-config``): brief section 6.

Public surface: :func:`load_policy`, :func:`check_policy`, :class:`PolicyError`.
Only this package's solver modules import z3.
"""

from __future__ import annotations

from tailguard.pipeline.policy import PolicyError, load_policy, parse_policy

__all__ = ["PolicyError", "load_policy", "parse_policy"]
