"""Every error tailguard raises, in one place, under one base: :class:`TailguardError`.

Each also keeps the built-in base it always had (``ValueError`` for unusable input,
``RuntimeError`` for a state that cannot go on, ``LookupError`` for something not found), so
``except ValueError`` keeps catching what it caught. Each room re-exports the errors it raises
from the module that raises them. The generated checker's :class:`CaseError` is the one
exception: the checker is a single vendorable module and cannot import this one, so it
derives from ``ValueError`` only.

Standard library only.
"""

from __future__ import annotations

from collections.abc import Sequence

from tailguard._generated.checker import Decision
from tailguard.base.intervals import fmt_set
from tailguard.base.vocab import Pair


class TailguardError(Exception):
    """Base of every error tailguard raises (but the vendorable checker's ``CaseError``)."""

# --- Input readers shared by every room (base/)


class JSONInputError(TailguardError, ValueError):
    """Unusable JSON text: ``line`` and ``col`` (1-based, 0 when unknown) and the ``reason``."""

    def __init__(self, reason: str, line: int = 0, col: int = 0, key: str | None = None) -> None:
        self.reason, self.line, self.col, self.key = reason, line, col, key
        where = f"line {line}, column {col}: " if line else ""
        super().__init__(f"{where}{reason}")


class DuplicateKeyError(JSONInputError):
    """A key repeated in one object (``key`` names it)."""

# --- The runtime guard (runtime/)


class InputError(TailguardError, ValueError):
    """Unusable input: ``where`` is ``FILE``, ``FILE:LINE[:COL]`` or ``FILE: field``."""

    def __init__(self, where: str, reason: str) -> None:
        self.where, self.reason = where, reason
        super().__init__(f"{where}: {reason}")


class EventLogError(TailguardError, ValueError):
    """Unusable input at ``source:line``: ``field`` says where, ``reason`` says why."""

    def __init__(self, source: str, line: int, field: str, reason: str) -> None:
        self.source, self.line, self.field, self.reason = source, line, field, reason
        super().__init__(f"{source}:{line}: {field}: {reason}")


class LogFailedError(TailguardError, RuntimeError):
    """An earlier write to the ledger's log failed: the ledger records nothing more."""


class UnrecoverableCompactionError(TailguardError, RuntimeError):
    """Raised when auto-compaction would commit with a broken recovery guarantee.

    ``failed`` holds the failed clause ids (spec order), ``holes`` the evicted offset
    ranges ``(lo, hi)`` nothing recovers (strict ``no_hole`` only), ``decision`` the full
    :class:`Decision` when a tailguard guard raised it. The seed's one-argument form
    ``UnrecoverableCompactionError("message")`` still works.
    """

    def __init__(
        self,
        *args: object,
        failed: Sequence[str] = (),
        holes: Sequence[Pair] = (),
        decision: Decision | None = None,
    ) -> None:
        super().__init__(*args)
        self.failed: tuple[str, ...] = tuple(failed)
        self.holes: tuple[Pair, ...] = tuple((lo, hi) for lo, hi in holes)
        self.decision = decision

    @classmethod
    def from_decision(
        cls, decision: Decision, sentences: Sequence[str]
    ) -> UnrecoverableCompactionError:
        """Build the exception for a refusal: the message names the clauses and the holes."""
        msg = f"compaction refused ({', '.join(decision.failed)})"
        if decision.holes:
            msg += f"; evicted offsets {fmt_set(list(decision.holes))} are unrecoverable"
        if sentences:
            msg += ": " + "; ".join(sentences)
        return cls(msg, failed=decision.failed, holes=decision.holes, decision=decision)


class SnapshotError(TailguardError, ValueError):
    """A ledger snapshot that cannot be restored: another format, version or session, altered,
    or not the state of the log it claims to continue. ``field`` names where, ``reason`` why."""

    def __init__(self, field: str, reason: str) -> None:
        self.field, self.reason = field, reason
        super().__init__(f"{field}: {reason}")

# --- The spill store (spill/)


class SpillError(TailguardError):
    """Base class of every spill-store error."""


class MalformedHandleError(SpillError, ValueError):
    """The text is not a handle this store could ever have issued (``sha256:<64 hex>``)."""


class ForeignHandleError(MalformedHandleError):
    """A well-formed handle of another scheme (``md5:...``, ``s3:...``): never ours."""


class RecordNotFoundError(SpillError, LookupError):
    """A well-formed handle whose bytes are not in this store."""


class CorruptRecordError(SpillError):
    """Stored bytes exist but do not hash to their handle (torn, truncated or altered)."""


class SpillWriteError(SpillError):
    """A put failed (disk full, permissions, I/O error). Nothing was reported written."""


class StoreNotFoundError(SpillError):
    """The directory is not a spill store (missing, or not created by this tool)."""


class InvalidSpillArgument(SpillError, ValueError):
    """A put argument (session, range, unit, data) is unusable; nothing was written."""


class SymlinkError(TailguardError, OSError):
    """A path component inside the store is a symbolic link: the store never follows one."""

# --- Framework adapters (adapters/)


class AdapterError(TailguardError, ValueError):
    """The framework's context cannot be mapped to offsets; nothing was recorded."""

# --- Offline policy checking (pipeline/)


class PolicyError(TailguardError, ValueError):
    """An unusable policy file; rendered ``FILE:LINE: key: reason``."""

    def __init__(self, file: str, line: int, key: str, reason: str) -> None:
        super().__init__(f"{file}:{line}: {key}: {reason}")
        self.file, self.line, self.key, self.reason = file, line, key, reason

# --- The spec language (speclang/)


class SpecError(TailguardError, ValueError):
    """The spec file is unusable; the message names file, line and field."""


class SpecSyntaxError(TailguardError, ValueError):
    """A malformed expression: carries the source text and the offending offset."""

    def __init__(self, msg: str, source: str, pos: int) -> None:
        self.msg, self.source, self.pos = msg, source, pos
        at = " column" if msg.endswith(" at") else " at column"
        super().__init__(f"{msg}{at} {pos + 1}: {source!r}")


class SpecTypeError(TailguardError, ValueError):
    def __init__(self, msg: str, pos: int) -> None:
        self.msg, self.pos = msg, pos
        super().__init__(msg)

# --- Derivation and proofs (backends/)


class NotProvable(TailguardError, ValueError):
    """Code of a shape the translation does not know (an edited or foreign checker)."""


class Cvc5Missing(TailguardError, RuntimeError):
    """cvc5 is not installed (``pip install cvc5``, in the ``prove`` and ``dev`` extras)."""

# --- The audit (audit/)


class EngineError(TailguardError, RuntimeError):
    """An engine that cannot go on (not a log's fault): the CLI reports it, exit 2."""


class OutputError(TailguardError, ValueError):
    """The --out target cannot be written (message names it)."""


class SourceError(TailguardError, ValueError):
    """A path argument that names no session (message names the argument)."""


class ImportSourceError(TailguardError, ValueError):
    """What a framework persisted cannot be imported (``tailguard import``, ``audit --from``);
    rendered ``SOURCE: where: why``."""

    def __init__(self, source: str, where: str, why: str) -> None:
        super().__init__(f"{source}: {where}: {why}")
        self.source, self.where, self.why = source, where, why


class BrowserError(TailguardError, RuntimeError):
    pass

# --- The conformance kit (conform/)


class ProtocolFailure(TailguardError):
    """The implementation crashed, hung, or answered with something that is not a response."""

    def __init__(self, kind: str, detail: str) -> None:
        self.kind, self.detail = kind, detail  # kind: crash | hang | garbage
        super().__init__(f"{kind}: {detail}")


class GuardError(TailguardError):
    """The guard cannot be loaded or called with case fields."""


class VectorError(TailguardError, ValueError):
    """The vector directory is missing, altered or of an unknown format."""

# --- Tool plumbing (tooling/)


class ProjectNotFound(TailguardError, RuntimeError):
    pass


class KitNotFound(TailguardError, LookupError):
    """Neither the installed package data nor a checkout's ``spec/`` is there."""


# The errors the package face exports carry its name, so a traceback names the import path a
# user has (``tailguard.UnrecoverableCompactionError``), and pickling finds them there.
for _cls in (TailguardError, LogFailedError, UnrecoverableCompactionError):
    _cls.__module__ = "tailguard"
del _cls
