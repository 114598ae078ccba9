"""The preset registry, its errors, ``check-config --explain`` / ``--list-frameworks``, and the
example policies of ``examples/presets/`` at real sizes (verdicts and time)."""

from __future__ import annotations

import importlib.metadata as md
import io
import json
from pathlib import Path

import pytest

from tailguard.cli.main import main
from tailguard.pipeline.policy import ClipArgs, PolicyError, parse_policy
from tailguard.pipeline.presets import PRESETS, find
from tests.presets.harness import REQUIRE

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "presets").glob("*.toml"))
HEAD = 'name = "p"\nturn_tokens = [1, 8000]\nmessages_per_turn = [1, 4]\nfloor = 8\nfloor_unit = "messages"\n'


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["check-config", *argv], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_every_preset_has_a_differential_test_or_says_why_not() -> None:
    for preset in PRESETS:
        assert preset.differential.startswith("tests/"), preset.name
        assert (ROOT / preset.differential).is_file(), preset.differential
        assert (ROOT / preset.doc).is_file(), preset.doc
        assert preset.differences, preset.name


# openhands-sdk cannot be installed beside the other frameworks (openai 2 against 3: see
# .ci/constraints-openhands.txt): tests/presets/test_openhands_preset.py checks its version in
# its own venv.
# strands-agents needs watchdog < 7, google-adk 2.15 watchdog >= 7: tests/presets/test_strands_preset.py
# checks its version where it is installed (docs/presets/strands.md).
OWN_VENV = (find("openhands.CondenserPipeline"), find("strands"), find("strands.SummarizingConversationManager"))


@pytest.mark.parametrize("preset", [p for p in PRESETS if p not in OWN_VENV], ids=lambda p: p.name)
def test_the_installed_packages_are_the_validated_ones(preset: object) -> None:
    """A preset names the versions its differential test passed on; moving a package means
    re-running that test and updating the list (CI installs these pins: .ci/constraints.txt)."""
    for entry in preset.validated_on:  # type: ignore[attr-defined]
        package, version = entry.split(" ")
        try:
            installed = md.version(package)
        except md.PackageNotFoundError:
            if REQUIRE:  # CI: a missing framework fails, never skips
                raise
            pytest.skip(f"{package} not installed (the frameworks extra)")
        assert installed == version, f"{preset.name}: validated on {entry}, installed {installed}"  # type: ignore[attr-defined]


@pytest.mark.parametrize(("table", "line", "key", "reason"), [
    ('[framework]\nname = "nope"\n', 7, "framework.name", "unknown framework 'nope'"),
    ('[framework]\nname = "langchain.SummarizationMiddleware"\ntrigger = ["bytes", 3]\n', 8,
     "framework.trigger", "unsupported kind 'bytes'"),
    ('[framework]\nname = "langchain.SummarizationMiddleware"\nkeep = ["fraction", 0.1]\n', 8,
     "framework.keep", "needs `window`"),
    ('[framework]\nname = "langchain.SummarizationMiddleware"\nkeeep = 3\n', 8,
     "framework.keeep", "unknown knob of langchain.SummarizationMiddleware"),
    ('[framework]\nname = "langmem.summarize_messages"\nmax_tokens = 100\nmax_summary_tokens = 100\n', 9,
     "framework.max_summary_tokens", "must be less than `max_tokens`"),
    ('[framework]\nname = "langmem.summarize_messages"\n', 6, "framework.max_tokens", "required"),
    ('[framework]\nname = "openhands.CondenserPipeline"\nmax_size = 8\nkeep_first = 4\n', 9,
     "framework.keep_first", "must be less than max_size // 2 - 1"),
    ('[framework]\nname = "openhands.CondenserPipeline"\n', 3, "messages_per_turn", "each event"),
    ('[framework]\nname = "autogen"\nmodel_context = "BufferedChatCompletionContext"\n', 6,
     "framework.buffer_size", "requires buffer_size"),
    ('[framework]\nname = "autogen"\nmodel_context = "SlidingContext"\n', 8,
     "framework.model_context", "expected one of"),
    ('[framework]\nname = "autogen"\nbuffer_size = 4\n', 8,
     "framework.buffer_size", "not a parameter of UnboundedChatCompletionContext"),
    ('[framework]\nname = "autogen"\nmodel_context = "HeadAndTailChatCompletionContext"\nhead_size = 1\n'
     'tail_size = 4\n', 3, "messages_per_turn", "without tool calls"),
    ('[framework]\nname = "autogen"\nmodel_context = "TokenLimitedChatCompletionContext"\n', 6,
     "framework.token_limit", "set window"),
    ('window = 5\n[framework]\nname = "langchain.SummarizationMiddleware"\n', 6, "window",
     "set the framework's own knobs under [framework]"),
    ('[framework]\nname = "langchain.SummarizationMiddleware"\ntrigger = {pages = 3}\n', 8,
     "framework.trigger", "unsupported trigger metric 'pages'"),
    ('[framework]\nname = "langchain.SummarizationMiddleware"\ntrigger = [{messages = true}]\n', 8,
     "framework.trigger", "messages must be an integer > 0, got True"),
    ('[framework]\nname = "langchain.SummarizationMiddleware"\ntrigger = [{tokens = 9}, {}]\n', 8,
     "framework.trigger", "a trigger clause must set at least one of tokens, messages, fraction"),
    ('[framework]\nname = "langchain.SummarizationMiddleware"\ntrigger = [{fraction = 0.5}]\n', 8,
     "framework.trigger", "needs `window`"),
    ('[framework]\nname = "langchain.SummarizationMiddleware"\ntrigger = [["tokens", 0]]\n', 8,
     "framework.trigger", "tokens must be an integer > 0, got 0"),
])
def test_errors_name_file_line_and_key(table: str, line: int, key: str, reason: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(HEAD + table, "p.toml")
    assert (info.value.file, info.value.line, info.value.key) == ("p.toml", line, key), str(info.value)
    assert reason in info.value.reason, info.value.reason


def test_a_bad_preset_file_is_exit_2_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(HEAD + '[framework]\nname = "langchain.SummarizationMiddleware"\ntrigger = 5\n')
    code, _out, err = cli(str(bad))
    assert code == 2 and "bad.toml:8: framework.trigger:" in err and "Traceback" not in err
    code, _, err = cli("--explain", str(bad))
    assert code == 2 and "bad.toml:8: framework.trigger:" in err


def test_langchain_never_compacts_by_default() -> None:
    """LangChain's trigger default is None: no compact stage at all."""
    policy = parse_policy(HEAD + '[framework]\nname = "langchain.SummarizationMiddleware"\n', "p.toml")
    assert policy.stages == ()


def test_deepagents_defaults_follow_the_profile() -> None:
    with_window = parse_policy(HEAD + '[framework]\nname = "deepagents.SummarizationMiddleware"\nwindow = 200000\n')
    without = parse_policy(HEAD + '[framework]\nname = "deepagents.SummarizationMiddleware"\n')
    clip, spill, compact = with_window.stages
    assert spill.kind == "spill" and spill.on_failure == "proceed"  # type: ignore[union-attr]
    assert (compact.trigger, compact.keep, compact.keep_unit) == (170000, 20000, "tokens")  # type: ignore[union-attr]
    assert (without.stages[2].trigger, without.stages[2].keep, without.stages[2].keep_unit) == \
        (170000, 6, "messages")  # type: ignore[union-attr]
    # compute_summarization_defaults' truncate_args_settings, before the offload
    assert clip == ClipArgs("tokens", 170000, "tokens", 20000, 501, line=clip.line)
    assert without.stages[0] == ClipArgs("messages", 20, "messages", 20, 501, line=clip.line)


def test_explain_prints_the_translation_text_and_json() -> None:
    path = str(ROOT / "examples" / "presets" / "langchain-defaults.toml")
    code, out, _ = cli("--explain", path)
    assert code == 0
    assert "langchain.SummarizationMiddleware (validated on langchain 1.5.2" in out
    assert "[[stage]]" in out and 'summary = "message"' in out and "input_limit = 4000" in out
    assert "tail_rounds_up" in out
    code, out, _ = cli("--explain", "--format", "json", path)
    entry = json.loads(out)["translations"][0]
    assert entry["policy"]["stage"][0]["trigger"] == 170000 and entry["defaulted"] == ["summary_tokens"]
    assert {d["name"] for d in entry["differences"]} >= {"tail_rounds_up", "start_on_human"}


def test_list_frameworks() -> None:
    code, out, _ = cli("--list-frameworks")
    assert code == 0
    for preset in PRESETS:
        assert preset.name in out and preset.validated_on[0] in out
    code, out, _ = cli("--list-frameworks", "--format", "json")
    assert [f["name"] for f in json.loads(out)["frameworks"]] == [p.name for p in PRESETS]


def test_no_policy_and_no_list_is_an_error() -> None:
    code, _, err = cli()
    assert code == 2 and "at least one POLICY.toml" in err


EXPECTED = {  # verdicts of the shipped defaults at real sizes (docs/presets/*.md)
    "langchain-defaults.toml": ("unsafe", {"hole"}),
    "langchain-repaired.toml": ("safe", set()),
    "deepagents-defaults.toml": ("unsafe", {"hole"}),  # truncate_args_settings clips first
    "deepagents-repaired.toml": ("safe", set()),
    "langmem-defaults.toml": ("unsafe", {"floor"}),
    "langmem-repaired.toml": ("safe", set()),
    "openai-agents-defaults.toml": ("unsafe", {"floor"}),
    "openai-agents-limit.toml": ("safe", set()),
    "openhands-defaults.toml": ("unsafe", {"floor", "hole"}),
    "openhands-repaired.toml": ("safe", set()),
    "pydantic-ai-threshold.toml": ("unsafe", {"overflow"}),
    "pydantic-ai-repaired.toml": ("safe", set()),
    "google-adk-sliding-window.toml": ("unsafe", {"floor"}),
    "google-adk-token-threshold.toml": ("safe", set()),
    "autogen-defaults.toml": ("unsafe", {"overflow"}),
    "autogen-buffered.toml": ("unsafe", {"hole"}),
    "autogen-head-and-tail.toml": ("unsafe", {"hole"}),
    "autogen-token-limited.toml": ("unsafe", {"hole", "unenforceable"}),
    "semantic-kernel-truncation.toml": ("unsafe", {"hole"}),
    "semantic-kernel-summarization.toml": ("safe", set()),
    "strands-defaults.toml": ("unsafe", {"hole"}),
    "strands-summarizing.toml": ("safe", set()),
    "llamaindex-memory-defaults.toml": ("unsafe", {"hole", "unenforceable"}),
    "llamaindex-memory-facts.toml": ("safe", set()),
    "llamaindex-chat-summary-defaults.toml": ("unsafe", {"hole", "unenforceable"}),
    "llamaindex-chat-summary-llm.toml": ("safe", set()),
}


def test_the_example_set_is_the_documented_one() -> None:
    assert sorted(p.name for p in EXAMPLES) == sorted(EXPECTED)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_at_real_sizes(path: Path) -> None:
    """Each preset's shipped defaults at real sizes: the documented verdict (how long a verdict
    takes is measured by benchmarks/bench_real_size.py, not by a timed test)."""
    _code, out, err = cli("--format", "json", str(path))
    entry = json.loads(out)["policies"][0]
    verdict, kinds = EXPECTED[path.name]
    assert entry["verdict"] == verdict, (entry, err)
    assert {f["kind"] for f in entry["findings"]} == kinds


def test_the_policy_schema_names_every_preset() -> None:
    schema = json.loads((ROOT / "spec" / "policy.schema.json").read_text())
    names = schema["properties"]["framework"]["properties"]["name"]["enum"]
    assert names == [n for p in PRESETS for n in (p.name, *p.aliases)]


def pins(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            out[name.strip().lower()] = version.split(";")[0].strip()
    return out


def test_the_openhands_constraints_agree_with_the_others_but_openai() -> None:
    """The OpenHands SDK's venv has its own pins (.ci/constraints-openhands.txt says why); a
    package pinned in both files has one version, but openai (2.x for litellm, 3.x for the rest)
    and protobuf (7 for the SDK, 5.29 for autogen-core), and pydantic (semantic-kernel, only in the main
    venv, caps it below 2.14)."""
    main_pins, oh = pins(ROOT / ".ci" / "constraints.txt"), pins(ROOT / ".ci" / "constraints-openhands.txt")
    assert oh["openhands-sdk"] == find("openhands.CondenserPipeline").validated_on[0].split(" ")[1]  # type: ignore[union-attr]
    differ = {n for n in set(main_pins) & set(oh) if main_pins[n] != oh[n]}
    declared = {"openai", "protobuf", "pydantic", "pydantic_core"}
    assert differ == declared, differ
    broken = {**main_pins, "litellm": "0.0.1"}  # the check is live: another difference is reported
    assert {n for n in set(broken) & set(oh) if broken[n] != oh[n]} == {*declared, "litellm"}
