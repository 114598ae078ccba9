"""tailguard: refuse lossy compaction whenever recovery cannot be proven.

The public surface is small: :func:`check` and :func:`check_case` decide one compaction
and return a :class:`Decision`; :class:`CaseError` reports unusable input. :class:`Ledger`
is the runtime guard an orchestrator keeps beside its context; a refused commit raises
:class:`UnrecoverableCompactionError`, a failed log write :class:`LogFailedError`, and every
error tailguard raises but ``CaseError`` derives from :class:`TailguardError`.
Everything here is standard library only.
"""

import typing as _typing

from tailguard._generated.checker import SPEC_VERSION, CaseError, Decision, check, check_case, explain

if _typing.TYPE_CHECKING:
    from tailguard.base.errors import LogFailedError, TailguardError, UnrecoverableCompactionError
    from tailguard.runtime.ledger import Ledger

__all__ = [
    "SPEC_VERSION",
    "CaseError",
    "Decision",
    "Ledger",
    "LogFailedError",
    "TailguardError",
    "UnrecoverableCompactionError",
    "check",
    "check_case",
    "explain",
]
__version__ = "0.1.0"

# The ledger's names load on first use, so ``import tailguard`` for ``check`` costs no more
# than the generated checker alone (PEP 562).
_LAZY = {
    "Ledger": "tailguard.runtime.ledger",
    "LogFailedError": "tailguard.base.errors",
    "TailguardError": "tailguard.base.errors",
    "UnrecoverableCompactionError": "tailguard.base.errors",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tailguard' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*__all__, "__version__"])
