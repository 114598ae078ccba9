"""``tailguard doctor``'s work: versions against validated ranges, then the differential check.

For each framework of :data:`~tailguard.doctor.registry.FRAMEWORKS`:

1. **Versions.** Every distribution a preset names in ``validated_on`` (an exact version) and
   every distribution of the adapter's extra (a range), installed or not.
2. **Differential check** (installed frameworks only): the driver module's cases, each one
   session of the real package against the preset's model or of the guarded adapter against
   the preset's findings, until the first disagreement.

A framework's status is one of :data:`STATUSES`; :func:`exit_code` folds them into the
command's exit code (:data:`EXIT_CODES`).
"""

from __future__ import annotations

import importlib
import logging
import random
import time
import traceback
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tailguard.doctor.harness import Mismatch
from tailguard.doctor.registry import Framework
from tailguard.doctor.versions import adapter_ranges, installed, normalize, satisfies
from tailguard.pipeline.presets import find

__all__ = ["EXIT_CODES", "STATUSES", "PackageCheck", "Report", "check_framework", "exit_code"]

#: ``ok``: installed, every version validated, the check agrees; ``outside``: the check agrees
#: but a version is outside what was validated; ``disagrees``: the real package and the preset
#: (or the adapter) differ; ``error``: the check could not run on what is installed;
#: ``not-installed``: the framework's package is absent (nothing to check);
#: ``not-checked``: installed, versions only (``--versions-only``).
STATUSES: tuple[str, ...] = ("ok", "outside", "disagrees", "error", "not-installed", "not-checked")
#: exit code -> meaning (``--help``, docs/doctor.md)
EXIT_CODES: dict[int, str] = {
    0: "every installed framework is in its validated range and agrees with its preset and adapter",
    1: "a framework disagrees with its preset or adapter, or its check could not run",
    2: "bad usage (an unknown --framework, a bad option)",
    3: "none disagrees, but an installed version is outside the validated range (or a framework "
       "named with --framework is not installed)",
}


@dataclass(frozen=True)
class PackageCheck:
    """One distribution: ``wanted`` the preset's exact version (``==1.5.2``) or the adapter's
    range (``>=1.5,<1.6``), ``source`` which (``preset`` or ``adapter``), ``installed`` its
    version (``None``: absent), ``ok`` whether it is inside. An absent package is not outside
    (only what is installed is compared; the framework's own package absent is ``not-installed``)."""

    name: str
    source: str
    wanted: str
    installed: str | None
    ok: bool

    def to_json(self) -> dict[str, Any]:
        return {"package": self.name, "for": self.source, "validated": self.wanted, "installed": self.installed,
                "in_range": self.ok}


@dataclass
class Report:
    """One framework's result; ``disagreement`` and ``error`` say what went wrong, where."""

    framework: str
    status: str = "not-installed"
    version: str | None = None
    packages: list[PackageCheck] = field(default_factory=list)
    sessions: int = 0
    compactions: int = 0
    adapter_runs: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    disagreement: dict[str, Any] | None = None
    error: str | None = None
    note: str = ""

    @property
    def in_range(self) -> bool:
        return all(p.ok for p in self.packages)

    def to_json(self) -> dict[str, Any]:
        return {"framework": self.framework, "status": self.status, "installed": self.version,
                "in_range": self.in_range, "packages": [p.to_json() for p in self.packages],
                "sessions": self.sessions, "compactions": self.compactions, "adapter_runs": self.adapter_runs,
                "seconds": round(self.seconds, 2), "cpu_seconds": round(self.cpu_seconds, 2),
                "disagreement": self.disagreement, "error": self.error, "note": self.note}


def preset_versions(framework: Framework) -> dict[str, str]:
    """Distribution -> the exact version the framework's presets were validated on."""
    out: dict[str, str] = {}
    for name in framework.presets:
        preset = find(name)
        if preset is None:
            raise LookupError(f"the registry names preset {name!r}, which does not exist")
        for entry in preset.validated_on:
            package, _, version = entry.partition(" ")
            if version and "@" not in entry:
                out[normalize(package)] = version
    return out


def package_checks(framework: Framework) -> list[PackageCheck]:
    exact = preset_versions(framework)
    ranges = adapter_ranges([framework.extra]) if framework.extra else {}
    versions = installed([*exact, *ranges])
    out = [PackageCheck(p, "preset", f"=={v}", versions[p], versions[p] in (None, v)) for p, v in exact.items()]
    for p, spec in ranges.items():
        have = versions[p]
        out.append(PackageCheck(p, "adapter", spec, have, have is None or satisfies(have, spec)))
    return out


def check_framework(framework: Framework, *, sessions: int, seed: int, differential: bool = True,
                    progress: Callable[[str], None] = lambda _: None) -> Report:
    """Versions, then (installed, ``differential``) the driver's cases until the first
    disagreement."""
    report = Report(framework.name, note=framework.note)
    report.version = installed([framework.package])[framework.package]
    report.packages = package_checks(framework)
    if report.version is None:
        return report
    report.note = ""
    if not differential:
        report.status = "not-checked"
        return report
    wall, cpu = time.perf_counter(), time.process_time()
    # the frameworks log and warn about what the checks do on purpose (a refused compaction, a
    # trimmer's fallback): the report says what matters
    quiet = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _differential(framework, report, sessions, seed, progress)
    finally:
        logging.disable(quiet)
        report.seconds = time.perf_counter() - wall
        report.cpu_seconds = time.process_time() - cpu
    if report.status == "not-installed":
        report.status = "ok" if report.in_range else "outside"
    return report


def _differential(framework: Framework, report: Report, sessions: int, seed: int,
                  progress: Callable[[str], None]) -> None:
    try:
        driver = importlib.import_module(f"tailguard.doctor.drivers.{framework.driver}")
        cases = driver.cases(random.Random(seed), sessions)
    except Exception as exc:  # an upgrade that moved what the driver (or the adapter) uses
        report.status, report.error = "error", _describe(exc)
        return
    for number, case in enumerate(cases, start=1):
        progress(f"{framework.name}: {case.check} {number}/{len(cases)}")
        try:
            compared = case.run()
        except Mismatch as exc:
            report.status = "disagrees"
            report.disagreement = {"check": case.check, "case": number, "session": case.label,
                                   "compaction": exc.compaction, "what": str(exc), "seed": seed}
            return
        except Exception as exc:  # the real package failed where the validated one ran
            report.status = "error"
            report.error = f"{case.check} case {number} ({case.label}): {_describe(exc)}"
            return
        if case.check == "preset":
            report.sessions += 1
            report.compactions += compared
        else:
            report.adapter_runs += 1


def _describe(exc: BaseException) -> str:
    frame = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" at {frame[0].filename.rsplit('/', 1)[-1]}:{frame[0].lineno}" if frame else ""
    return " ".join(f"{type(exc).__name__}: {exc}{where}".split())[:500]


def exit_code(reports: Iterable[Report], named: Iterable[str] = ()) -> int:
    """0, 1 or 3 (:data:`EXIT_CODES`)."""
    reports = list(reports)
    if any(r.status in ("disagrees", "error") for r in reports):
        return 1
    wanted = set(named)
    if any(r.status == "outside" or (r.status == "not-checked" and not r.in_range)
           or (r.status == "not-installed" and r.framework in wanted) for r in reports):
        return 3
    return 0
