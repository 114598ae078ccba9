"""``tailguard doctor``: versions against the validated ranges, the differential check on what is
installed, and the exit codes (docs/doctor.md).

The framework-free tests fake what is installed (``importlib.metadata.version``); the others
need the frameworks (CI installs them: ``TAILGUARD_REQUIRE_FRAMEWORKS=1`` makes a missing one a
failure, never a skip) and run the real packages, offline.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.util
import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tailguard.doctor import registry, versions
from tailguard.doctor.run import EXIT_CODES
from tests.cli_helpers import run_cli
from tests.presets.harness import REQUIRE

ROOT = Path(__file__).resolve().parent.parent
REAL_VERSION = importlib.metadata.version


def doctor_json(*argv: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = run_cli("doctor", "--json", *argv)
    return code, json.loads(out), err


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["framework"]: f for f in report["frameworks"]}


def fake_versions(monkeypatch: pytest.MonkeyPatch, fake: dict[str, str | None]) -> None:
    """``importlib.metadata.version`` answering ``fake`` for its distributions (``None``: not
    installed) and the truth for the others."""

    def version(name: str) -> str:
        key = versions.normalize(name)
        if key in fake:
            if fake[key] is None:
                raise importlib.metadata.PackageNotFoundError(name)
            return str(fake[key])
        return REAL_VERSION(name)

    monkeypatch.setattr(importlib.metadata, "version", version)


# -- versions --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("version", "spec", "inside"), [
    ("1.5.2", ">=1.5,<1.6", True), ("1.6.0", ">=1.5,<1.6", False), ("1.5", ">=1.5,<1.6", True),
    ("1.4.99", ">=1.5,<1.6", False), ("1.6.0rc1", "<1.6", False), ("1.5.9.post1", "<1.6", True),
    ("0.0.30", ">=0.0.30,<0.0.31", True), ("0.0.31", ">=0.0.30,<0.0.31", False),
    ("1.58.2", "~=1.58.0", True), ("1.59.0", "~=1.58.0", False), ("2.68.0", "==2.68.*", True),
    ("2.69.0", "==2.68.*", False), ("1.0.dev3", ">=1.0a1", False), ("1.0a2", ">=1.0a1", True),
    ("1.2.3", "", True), ("garbage", ">=1", False), ("1.2.3", "!=1.2.3", False),
])
def test_version_ranges(version: str, spec: str, inside: bool) -> None:
    assert versions.satisfies(version, spec) is inside


def test_a_requirement_line_is_read_as_pip_writes_it() -> None:
    req = versions.parse_requirement('pydantic-ai-slim[openai]<2.69,>=2.68; extra == "pydantic-ai"')
    assert req == versions.Requirement("pydantic-ai-slim", "<2.69,>=2.68", "pydantic-ai")
    marker = versions.parse_requirement(
        "openhands-sdk<1.59,>=1.58; python_version >= \"3.12\" and extra == 'openhands'")
    assert marker == versions.Requirement("openhands-sdk", "<1.59,>=1.58", "openhands")


def test_the_adapter_ranges_are_the_extras_of_pyproject() -> None:
    """One source: what doctor reads back is pyproject.toml's extras, clause for clause."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for framework in registry.FRAMEWORKS:
        assert framework.extra in extras, framework
        wanted: dict[str, set[str]] = {}
        for line in extras[framework.extra]:
            req = versions.parse_requirement(line)
            assert req is not None
            wanted[req.name] = set(req.specifier.split(","))
        got = {name: set(spec.split(",")) for name, spec in versions.adapter_ranges([framework.extra]).items()}
        assert got == wanted, framework.name


def test_from_a_source_tree_the_ranges_come_from_pyproject(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from a checkout without installing (no tailguard metadata): the same ranges, read
    from the checkout's pyproject.toml."""
    installed = versions.adapter_ranges(["langchain", "openhands"])

    def missing(name: str) -> None:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "requires", missing)
    from_source = versions.adapter_ranges(["langchain", "openhands"])
    assert from_source and {k: set(v.split(",")) for k, v in from_source.items()} == \
        {k: set(v.split(",")) for k, v in installed.items()}


def test_every_registry_entry_names_a_preset_and_a_driver() -> None:
    from tailguard.pipeline.presets import PRESETS, find

    named = {p for f in registry.FRAMEWORKS for p in f.presets}
    assert named == {p.name for p in PRESETS}, "a preset doctor does not check, or a name that is no preset"
    for f in registry.FRAMEWORKS:
        assert all(find(p) is not None for p in f.presets)
        assert (ROOT / "src" / "tailguard" / "doctor" / "drivers" / f"{f.driver}.py").is_file(), f.name
    assert len({f.name for f in registry.FRAMEWORKS}) == len(registry.FRAMEWORKS)


# -- usage -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("argv", "message"), [
    (["--framework", "nope"], "--framework: unknown framework 'nope' (known: langchain, "),
    (["--sessions", "0"], "--sessions must be in [1, 10000], got 0"),
    (["--quick", "--sessions", "3"], "give --quick or --sessions, not both"),
])
def test_bad_usage_is_exit_2_with_a_message(argv: list[str], message: str) -> None:
    code, out, err = run_cli("doctor", *argv)
    assert (code, out) == (2, "")
    assert message in err and "Traceback" not in err


def test_help_lists_the_exit_codes_and_the_frameworks(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run_cli("doctor", "--help")
    text = " ".join(capsys.readouterr().out.split())
    assert code == 0 and "exit codes:" in text
    for number, meaning in EXIT_CODES.items():
        assert f"{number} {meaning}" in text
    assert "Frameworks: " + ", ".join(f.name for f in registry.FRAMEWORKS) in text


def test_the_cli_and_the_runtime_import_no_framework() -> None:
    code = ("import sys, tailguard, tailguard.cli.doctor, tailguard.doctor.run, tailguard.doctor.harness\n"
            "bad = [m for m in ('langchain', 'langchain_core', 'agents', 'langmem', 'deepagents', 'pydantic_ai', "
            "'google.adk', 'openhands', 'autogen_core', 'autogen_agentchat', 'autogen_ext', 'semantic_kernel', "
            "'strands', 'llama_index') "
            "if m in sys.modules]\n"
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


# -- statuses and exit codes, framework-free --------------------------------------------------------


def test_a_version_outside_the_range_is_reported_exit_3(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--versions-only`` with langchain faked to 1.6.0: outside both the preset's exact version
    and the adapter's range; nothing disagrees, so exit 3."""
    fake_versions(monkeypatch, {"langchain": "1.6.0", "langchain-core": "1.8.3", "langgraph": "1.2.24",
                                "langgraph-checkpoint-sqlite": "3.1.2"})
    code, report, _ = doctor_json("--framework", "langchain", "--versions-only")
    assert code == 3 and report["exit_code"] == 3
    lc = by_name(report)["langchain"]
    assert lc["status"] == "not-checked" and lc["installed"] == "1.6.0" and not lc["in_range"]
    outside = {(p["package"], p["for"]) for p in lc["packages"] if not p["in_range"]}
    assert outside == {("langchain", "preset"), ("langchain", "adapter")}


def test_an_absent_optional_package_is_not_outside(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_versions(monkeypatch, {"langchain": "1.5.2", "langchain-core": "1.8.3", "langgraph": "1.2.24",
                                "langgraph-checkpoint-sqlite": None})
    code, report, _ = doctor_json("--framework", "langchain", "--versions-only")
    sqlite = next(p for p in by_name(report)["langchain"]["packages"] if p["package"] == "langgraph-checkpoint-sqlite")
    assert code == 0 and sqlite["installed"] is None and sqlite["in_range"]


def test_validated_versions_only_are_exit_0(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_versions(monkeypatch, {"langchain": "1.5.2", "langchain-core": "1.8.3", "langgraph": "1.2.24",
                                "langgraph-checkpoint-sqlite": "3.1.2"})
    code, report, _ = doctor_json("--framework", "langchain", "--versions-only")
    assert code == 0 and by_name(report)["langchain"]["in_range"]


def test_a_named_framework_that_is_not_installed_is_exit_3(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_versions(monkeypatch, {"openhands-sdk": None})
    code, report, _ = doctor_json("--framework", "openhands")
    assert code == 3 and by_name(report)["openhands"]["status"] == "not-installed"
    assert by_name(report)["openhands"]["note"]  # where it lives instead


def test_strands_outside_its_own_venv_is_not_installed_with_where_it_lives() -> None:
    """Strands cannot share the frameworks venv (watchdog): there doctor reports it not installed,
    naming its own venv, and the driver is never imported (tests/presets/test_strands_preset.py
    runs doctor where it is installed)."""
    if importlib.util.find_spec("strands") is not None:
        pytest.skip("strands is installed here (its own venv)")
    code, report, _ = doctor_json("--framework", "strands")
    entry = by_name(report)["strands"]
    assert code == 3 and entry["status"] == "not-installed" and ".venvs/py3.12-strands" in entry["note"], entry
    code, report, _ = doctor_json("--quick", "--versions-only")
    assert by_name(report)["strands"]["status"] == "not-installed"


def test_nothing_installed_is_exit_0(monkeypatch: pytest.MonkeyPatch) -> None:
    names = {p["package"] for f in doctor_json("--versions-only")[1]["frameworks"] for p in f["packages"]}
    names |= {versions.normalize(f.package) for f in registry.FRAMEWORKS}
    fake_versions(monkeypatch, dict.fromkeys(names))
    code, report, _ = doctor_json()
    assert code == 0 and {f["status"] for f in report["frameworks"]} == {"not-installed"}


def test_a_driver_that_cannot_run_is_an_error_exit_1(monkeypatch: pytest.MonkeyPatch) -> None:
    """An upgrade that moved what a driver imports: status ``error`` naming the exception."""
    broken = registry.Framework("pytest", "pytest", ("langchain.SummarizationMiddleware",), None, "no_such_driver")
    monkeypatch.setattr(registry, "FRAMEWORKS", (broken,))
    monkeypatch.setattr("tailguard.cli.doctor.FRAMEWORKS", (broken,))
    code, report, _ = doctor_json("--framework", "pytest")
    entry = by_name(report)["pytest"]
    assert code == 1 and entry["status"] == "error"
    assert "ModuleNotFoundError" in entry["error"] and "no_such_driver" in entry["error"]


# -- the real frameworks ---------------------------------------------------------------------------


def needs(module: str) -> None:
    if not REQUIRE:
        pytest.importorskip(module, reason="install the frameworks extra (CI does)")


def test_doctor_agrees_on_the_installed_frameworks() -> None:
    """Every framework of the frameworks extra: validated versions, and the real package agrees
    with its preset and adapter (CI's pins are the validated versions)."""
    for module in ("langchain", "deepagents", "langmem", "agents", "pydantic_ai", "google.adk", "autogen_core",
                   "autogen_ext.models.replay", "semantic_kernel", "llama_index.core"):
        needs(module)
    code, report, err = doctor_json("--quick")
    entries = by_name(report)
    assert code == 0, json.dumps(report, indent=1)
    for name in ("langchain", "deepagents", "langmem", "openai-agents", "pydantic-ai", "google-adk", "autogen",
                 "semantic-kernel", "llamaindex"):
        entry = entries[name]
        assert entry["status"] == "ok", entry
        assert entry["compactions"] > 0 and entry["adapter_runs"] >= 1, entry  # not vacuous
    assert f"{'langchain'}: preset 1/" in err  # progress on stderr


def test_a_broken_preset_is_a_disagreement_exit_1(monkeypatch: pytest.MonkeyPatch) -> None:
    """The LangChain preset's translation broken on purpose (keep three messages more than the
    middleware, one more tool turn of the fixed session): doctor names the disagreement, the
    session and the compaction, exit 1."""
    needs("langchain")
    from tailguard.pipeline import presets

    good = presets.find("langchain.SummarizationMiddleware")
    assert good is not None

    def keep_more(values: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        top, stages = good.translate(values)
        return top, [dict(stages[0], keep=stages[0]["keep"] + 3), *stages[1:]]

    broken = dataclasses.replace(good, translate=keep_more)
    monkeypatch.setitem(presets._BY_NAME, good.name, broken)
    code, report, _ = doctor_json("--framework", "langchain", "--quick")
    entry = by_name(report)["langchain"]
    assert code == 1 and entry["status"] == "disagrees", entry
    d = entry["disagreement"]
    assert d["check"] == "preset" and d["case"] == 1 and d["compaction"] == 1
    assert "LangChain deleted" in d["what"] and "knobs" in d["session"]
    code, out, _ = run_cli("doctor", "--framework", "langchain", "--quick")
    assert code == 1 and "langchain: DISAGREES" in out and "compaction 1: append" in out


def test_outside_the_range_but_agreeing_is_exit_3(monkeypatch: pytest.MonkeyPatch) -> None:
    """langmem faked one release ahead: the check runs on the real (validated) package and
    agrees, the version is outside: exit 3, status ``outside``."""
    needs("langmem")
    fake_versions(monkeypatch, {"langmem": "0.0.31"})
    code, report, _ = doctor_json("--framework", "langmem", "--quick")
    entry = by_name(report)["langmem"]
    assert code == 3 and entry["status"] == "outside" and entry["compactions"] > 0, entry


def test_an_adapter_that_never_refuses_is_a_disagreement(monkeypatch: pytest.MonkeyPatch) -> None:
    """The LangChain adapter broken on purpose (``on_refuse`` forced to ``defer``: it never
    halts): the fixed session, whose trimmer drops what it never summarized, must be refused,
    and doctor reports the adapter check as the disagreement."""
    needs("langchain")
    from tailguard.doctor.drivers import langchain as driver

    class Lenient(driver.GuardedSummarizationMiddleware):  # type: ignore[misc,name-defined]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **{**kwargs, "on_refuse": "defer"})

    monkeypatch.setattr(driver, "GuardedSummarizationMiddleware", Lenient)
    code, report, _ = doctor_json("--framework", "langchain", "--quick")
    d = by_name(report)["langchain"]["disagreement"]
    assert code == 1 and d["check"] == "adapter" and "the adapter allowed all" in d["what"], d


def test_a_broken_autogen_preset_or_adapter_is_a_disagreement(monkeypatch: pytest.MonkeyPatch) -> None:
    """The AutoGen preset's buffer one message too large (the model keeps what the buffer drops):
    the fixed session disagrees at its first compaction; then, the preset sound, an adapter that
    never refuses (``on_refuse`` forced to ``defer``) is the adapter check's disagreement."""
    needs("autogen_core")
    needs("autogen_ext.models.replay")
    from tailguard.doctor.drivers import autogen as driver
    from tailguard.pipeline import presets

    good = presets.find("autogen")
    assert good is not None

    def one_more(values: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        top, stages = good.translate(values)
        return top, [dict(s, limit=s["limit"] + 1) if values["model_context"] == driver.BUFFERED else s
                     for s in stages]

    with monkeypatch.context() as patch:
        patch.setitem(presets._BY_NAME, good.name, dataclasses.replace(good, translate=one_more))
        code, report, _ = doctor_json("--framework", "autogen", "--quick")
    d = by_name(report)["autogen"]["disagreement"]
    assert code == 1 and d["check"] == "preset" and (d["case"], d["compaction"]) == (1, 1), d
    assert "AutoGen's view [1, 2, 3, 4], the model [0, 1, 2, 3, 4]" in d["what"]

    class Lenient(driver.GuardedChatCompletionContext):  # type: ignore[misc,name-defined]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **{**kwargs, "on_refuse": "defer"})

    monkeypatch.setattr(driver, "GuardedChatCompletionContext", Lenient)
    code, report, _ = doctor_json("--framework", "autogen", "--quick")
    d = by_name(report)["autogen"]["disagreement"]
    assert code == 1 and d["check"] == "adapter" and "the adapter allowed all 12 views" in d["what"], d


def test_a_broken_llamaindex_preset_or_adapter_is_a_disagreement(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Memory preset's history budget one token too large (the model drops later than Memory
    flushes): the fixed session disagrees at its first flush; then, the presets sound, a
    ``GuardedMemory`` that never refuses (``on_refuse`` forced to ``defer``) lets the lossy
    Memory-defaults session through, the adapter check's disagreement."""
    needs("llama_index.core")
    from tailguard.doctor.drivers import llamaindex as driver
    from tailguard.pipeline import presets

    good = presets.find("llamaindex.Memory")
    assert good is not None

    def one_more(values: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        top, stages = good.translate(values)
        return top, [dict(s, limit=s["limit"] + 1) if s["kind"] == "truncate" else s for s in stages]

    with monkeypatch.context() as patch:
        patch.setitem(presets._BY_NAME, good.name, dataclasses.replace(good, translate=one_more))
        code, report, _ = doctor_json("--framework", "llamaindex", "--quick")
    d = by_name(report)["llamaindex"]["disagreement"]
    assert code == 1 and d["check"] == "preset" and (d["case"], d["compaction"]) == (1, 1), d
    assert d["what"].startswith("append 20 ") and d["what"].endswith(
        "Memory flushed turns [0, 1, 2], the model dropped [] (flush_batches: the first flush at the same append, "
        "the model's dropped turns the oldest flushed)"), d

    class Lenient(driver.GuardedMemory):  # type: ignore[misc,name-defined]
        @classmethod
        def from_defaults(cls, **kwargs: Any) -> Any:  # type: ignore[override]
            return super().from_defaults(**{**kwargs, "on_refuse": "defer"})

    monkeypatch.setattr(driver, "GuardedMemory", Lenient)
    code, report, _ = doctor_json("--framework", "llamaindex", "--quick")
    d = by_name(report)["llamaindex"]["disagreement"]
    assert code == 1 and d["check"] == "adapter" and "the adapter refused none of the 3 appends" in d["what"], d


def test_a_broken_semantic_kernel_preset_or_adapter_is_a_disagreement(monkeypatch: pytest.MonkeyPatch) -> None:
    """The summarization preset keeping one message more than SK's target_count (the model then
    has nothing to summarize where SK summarizes the oldest message): the fixed chat disagrees at
    its first reduction; then, the presets sound,
    a guard that never refuses (``on_refuse`` forced to ``defer``) lets the lossy truncation chat
    through, the adapter check's disagreement."""
    needs("semantic_kernel")
    from tailguard.doctor.drivers import semantic_kernel as driver
    from tailguard.pipeline import presets

    good = presets.find(driver.SUMMARIZATION)
    assert good is not None

    def keep_more(values: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        top, stages = good.translate(values)
        return top, [dict(stages[0], keep=stages[0]["keep"] + 1)]

    with monkeypatch.context() as patch:
        patch.setitem(presets._BY_NAME, good.name, dataclasses.replace(good, translate=keep_more))
        code, report, _ = doctor_json("--framework", "semantic-kernel", "--quick")
    d = by_name(report)["semantic-kernel"]["disagreement"]
    assert code == 1 and d["check"] == "preset" and (d["case"], d["compaction"]) == (1, 1), d
    assert d["what"].startswith("append 4 ") and d["what"].endswith("SK deleted [0], the model None"), d

    class Lenient(driver.ReducerGuard):  # type: ignore[misc,name-defined]
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**{**kwargs, "on_refuse": "defer"})

    monkeypatch.setattr(driver, "ReducerGuard", Lenient)
    code, report, _ = doctor_json("--framework", "semantic-kernel", "--quick")
    d = by_name(report)["semantic-kernel"]["disagreement"]
    assert code == 1 and d["check"] == "adapter" and "the adapter refused none of the 20 appends" in d["what"], d
