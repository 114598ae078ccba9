"""``tailguard check-config``: prove a compaction policy safe for every session, or break it.

``--profile partitioned`` (default) or ``strict`` picks the floor rule (brief 6b): the
newest F units verbatim in the context after every compaction, and under ``strict`` also
inside the summarizer's input. Exit 0 all safe, 1 any unsafe, 3 any unknown and none
unsafe, 2 any unusable file (``FILE:LINE: key: reason`` on stderr, never a traceback; the
other files are still checked and the bad one is reported in place: verdict ``error``).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from tailguard.pipeline.model import Profile
    from tailguard.pipeline.report import Entry
    from tailguard.pipeline.solver import Budget

DEFAULT_TIMEOUT = 60.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register check-config's options."""
    parser.epilog = ("exit codes: 0 safe, 1 unsafe, 3 unknown (a budget ran out), 2 unusable input "
                     "(FILE:LINE: key: reason); several files: the worst verdict")
    parser.add_argument("policies", nargs="*", metavar="POLICY.toml",
                        help="policy files (format: docs/check-config.md)")
    parser.add_argument("--format", choices=("text", "json", "sarif"), default="text",
                        help="text: verdict, findings and traces (default); json: one object for all files; "
                             "sarif: SARIF 2.1.0 for code scanning")
    parser.add_argument("--profile", choices=("partitioned", "strict"), default="partitioned",
                        help="partitioned (default): the floor stays verbatim in the context; "
                             "strict: it must also be in the summarizer's input "
                             "(audit the emitted trace with the same profile)")
    parser.add_argument("--suggest", action="store_true",
                        help="search the nearest sane knob values (one knob or several) that make "
                             "the policy safe; every fix is re-checked safe on the edited file; "
                             "a progress line per probe goes to stderr")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help="--suggest: stop the fix search (all files together) after SECONDS "
                             f"and report the fixes verified so far (default {DEFAULT_TIMEOUT:g}; "
                             "SIGINT and SIGTERM do the same)")
    parser.add_argument("--emit-trace", metavar="FILE",
                        help="write the failing session as a JSONL event log for `tailguard audit`")
    parser.add_argument("--html", metavar="REPORT.html",
                        help="also write the verdicts as one self-contained HTML page (docs/html-report.md)")
    parser.add_argument("--depth", type=int, default=None,
                        help="depth budget: the longest session any search tries or reports "
                             "(appends), the concrete falsifier's included (default: the bounded "
                             "search tries 150, the falsifier's sessions are bounded by --budget)")
    parser.add_argument("--explain", action="store_true",
                        help="print each framework policy's translation into stages (docs/presets/) "
                             "instead of checking it")
    parser.add_argument("--list-frameworks", action="store_true",
                        help="list the framework presets and the package versions each was validated on")
    parser.add_argument("--budget", type=int, default=100, metavar="N",
                        help="solver budget: N million z3 resource units (rlimit) for each solver "
                             "query and for the invariant search, and N x 600 model appends for "
                             "the concrete falsifier; counted in work, not time, so the verdict "
                             "does not depend on the machine (default 100)")


def run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """Check every policy; print the report; return the exit code."""
    from tailguard.base.safeio import printable, write_atomic
    from tailguard.pipeline.policy import Policy, PolicyError, load_policy
    from tailguard.pipeline.report import EXIT_CODES, BadFile, Report, overall

    if args.list_frameworks or args.explain:
        from tailguard.cli.check_config_presets import explain, list_frameworks

        if args.list_frameworks:
            return list_frameworks(args.format, stdout)
        return explain(args.policies, args.format, stdout, stderr)
    if not args.policies:
        print("tailguard check-config: give at least one POLICY.toml (or --list-frameworks)", file=stderr)
        return 2
    if (args.depth is not None and args.depth < 1) or args.budget < 1:
        print("tailguard check-config: --depth and --budget must be >= 1", file=stderr)
        return 2
    if not args.timeout > 0:  # also refuses nan
        print(f"tailguard check-config: --timeout must be > 0 seconds, got {args.timeout}", file=stderr)
        return 2
    loaded: list[Policy | BadFile] = []
    for path in args.policies:  # a bad file is reported in its place; the others are checked
        try:
            loaded.append(load_policy(path))
        except PolicyError as exc:
            print(f"tailguard check-config: {printable(str(exc))}", file=stderr)
            loaded.append(BadFile(exc.file, exc.line, exc.key, exc.reason, str(exc)))
    from tailguard.pipeline.report import render_json, render_sarif, render_text
    from tailguard.pipeline.solver import Budget, decide
    from tailguard.pipeline.trace import render_jsonl, session_events

    profile: Profile = "strict" if args.profile == "strict" else "partitioned"
    budget = Budget.of(args.budget, depth=args.depth)
    entries: list[Entry] = []
    for policy in loaded:
        if isinstance(policy, BadFile):
            entries.append(policy)
            continue
        entries.append(Report(policy, decide(policy, budget, profile=profile)))
    if args.suggest:
        _suggest_all(entries, budget, profile, args.timeout, stderr)
    if args.emit_trace:
        failing = next((r for r in entries if isinstance(r, Report) and r.decision.trace), None)
        if failing is None:
            print("tailguard check-config: no failing session to emit", file=stderr)
        else:
            events = session_events(failing.policy, list(failing.decision.trace), profile,
                                    failing.decision.messages, frozenset(failing.decision.failures))
            if not any(f.kind in ("hole", "floor") for f in failing.decision.findings):
                print(f"tailguard check-config: {failing.policy.file}: the failing session only "
                      "overflows, which an event log cannot show: every compaction in "
                      f"{args.emit_trace} is allowed", file=stderr)
            try:
                write_atomic(args.emit_trace, render_jsonl(events).encode("utf-8"))  # an old one stays whole on failure
            except OSError as exc:
                print(f"tailguard check-config: {args.emit_trace}: {exc.strerror}", file=stderr)
                return 2
    if args.html:
        from tailguard.audit.html import policy_report, write_html

        problem = write_html(args.html, policy_report(list(entries), args.profile, budget.rlimit))
        if problem is not None:
            print(f"tailguard check-config: --html: {problem}", file=stderr)
            return 2
    render = {"text": render_text, "json": render_json, "sarif": render_sarif}[args.format]
    stdout.write(render(entries))
    return EXIT_CODES[overall(entries)]


def _suggest_all(entries: list[Entry], budget: Budget, profile: Profile, timeout: float,
                 stderr: TextIO) -> None:
    """Run ``--suggest`` on every policy not proved safe, one deadline for all, stoppable by
    SIGINT/SIGTERM; each report gets the fixes verified before any stop."""
    from tailguard.pipeline.report import Report
    from tailguard.pipeline.suggest import suggest
    from tailguard.pipeline.suggest_stop import StopFlag, run_stoppable

    flag = StopFlag(timeout)

    def say(line: str) -> None:
        print(line, file=stderr, flush=True)

    def work() -> None:
        for entry in entries:
            if not isinstance(entry, Report) or entry.decision.verdict == "safe":
                continue
            say(f"suggest: {entry.policy.file}: searching (timeout {timeout:g} s for all files)")
            entry.suggested = suggest(entry.policy, entry.decision, budget, profile=profile,
                                      flag=flag, progress=say)
            if entry.suggested.stopped:
                say(f"suggest: stopped by {entry.suggested.stopped}; printing the fixes verified so far")
                break

    run_stoppable(work, flag)
    for entry in entries:  # the policies the stop left unsearched
        if isinstance(entry, Report) and entry.decision.verdict != "safe" and entry.suggested is None:
            from tailguard.pipeline.suggest import Outcome

            entry.suggested = Outcome(stopped=flag.reason or "timeout")
