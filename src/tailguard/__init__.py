"""tailguard: refuse lossy compaction whenever recovery cannot be proven.

The public surface is small: :func:`check` and :func:`check_case` decide one compaction
and return a :class:`Decision`; :class:`CaseError` reports unusable input. Everything
here is standard library only.
"""

from tailguard._generated.checker import SPEC_VERSION, CaseError, Decision, check, check_case, explain

__all__ = ["SPEC_VERSION", "CaseError", "Decision", "check", "check_case", "explain"]
__version__ = "0.1.0"
