"""HTML post-mortems (issue 13): a picture of a session's offsets, and of a policy's verdict.

- :func:`session_report`: ``tailguard audit --html``. The session view of an event log,
  built from the audit's own replay (:mod:`tailguard.audit.html.session_data`).
- :func:`policy_report`: ``tailguard check-config --html``. For an unsafe policy the
  counterexample session as occupancy over appends against the trigger, the ceilings and the
  window, each stage's action per append, and the session view of its event log below; for a
  safe one the invariant it was proved with, in words.

One self-contained file (inline CSS and SVG, no script, nothing from the network),
deterministic for the same input. Standard library only (the policy view imports the
pipeline, which needs z3, only when asked for).
"""

from __future__ import annotations

from collections.abc import Iterable

from tailguard.audit.html.page import page
from tailguard.audit.html.session_data import SessionData, collect
from tailguard.audit.html.session_view import render_session
from tailguard.base.safeio import elide, open_regular, write_atomic
from tailguard.runtime.eventlog import EventLogError

__all__ = ["SessionData", "audit_html", "collect", "policy_report", "session_report", "write_html"]


def session_report(lines: Iterable[bytes], source: str, profile: str = "strict") -> str:
    """The HTML page for an event log (raises ``EventLogError`` for unusable input)."""
    data = collect(lines, source, profile)
    verdict = f"{data.violations} refused" if data.violations else "all allowed"
    title = f"tailguard audit: {elide(source, 120)} ({verdict}, profile {profile})"
    return page(title, render_session(data))


def policy_report(reports: list[object], profile: str, rlimit: int | None = None) -> str:
    """The HTML page for check-config's reports (``tailguard.pipeline.report.Report``; an
    unusable file, ``BadFile``, is shown in its place with verdict ``error``, never ``safe``).
    ``rlimit``: the solver budget the verdicts were decided with (default: the engine's), for
    reading back a safe verdict's invariant."""
    from tailguard.audit.html.policy_view import policy_page

    return policy_page(reports, profile, rlimit)


def audit_html(path: str, trace: str, profile: str) -> str | None:
    """``tailguard audit --html``: write the session page of ``trace``; the problem, or None."""
    from tailguard.runtime.case import display_name
    from tailguard.runtime.eventlog import bounded_lines

    try:
        with open_regular(trace) as f:
            text = session_report(bounded_lines(f), display_name(trace), profile)
    except EventLogError as exc:
        return str(exc)
    except OSError as exc:
        return f"cannot read {trace}: {exc.strerror or exc}"
    return write_html(path, text)


def write_html(path: str, text: str) -> str | None:
    """Write ``text`` to ``path`` (a temporary file, then a rename); the reason it failed, or None."""
    try:  # atomic: a failure (here or before) leaves an existing report as it was
        write_atomic(path, text.encode("utf-8", "backslashreplace"))
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror or exc}"
    return None
