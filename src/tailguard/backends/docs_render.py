"""Render the clause reference (a Markdown block inside spec/SPEC.md) from the spec."""

from __future__ import annotations

from tailguard.speclang.load import Spec
from tailguard.speclang.pretty import pretty

BEGIN = "<!-- BEGIN GENERATED: clause reference (tailguard gen; do not edit by hand) -->"
END = "<!-- END GENERATED: clause reference -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_clause_reference(spec: Spec) -> str:
    out = [BEGIN, "", f"Spec version **{spec.version}**, `spec/clauses.toml` sha256 `{spec.sha256[:16]}`.", ""]
    out += ["#### Inputs", "", "| case field | symbol | type | meaning |", "|---|---|---|---|"]
    out += [f"| `{i.field}` | `{i.symbol}` | {i.type} | {_cell(i.doc)} |" for i in spec.inputs]
    out += ["", f"Known units: {', '.join(f'`{u}`' for u in spec.units)}.", ""]
    out += ["#### Definitions", "", "| name | definition | meaning |", "|---|---|---|"]
    out += [f"| `{d.name}` | `{_cell(pretty(d.node))}` | {_cell(d.doc)} |" for d in spec.defines]
    for prof in spec.profiles:
        out += ["", f"#### Profile `{prof.id}`", "", prof.doc, ""]
        if prof.extends:
            dropped = ", ".join(f"`{c}`" for c in prof.without)
            out.append(f"Defined as profile `{prof.extends}` without {dropped}: the same clause objects, "
                       "so each is defined once.")
        if prof.report == "first":
            out.append("Clauses are checked in order; the first that fails is the only one reported.")
        else:
            out.append("Every clause is evaluated and every failing one is reported, in this order.")
        if prof.wellformed:
            out.append(
                f"If `{prof.wellformed}` fails, the decision is refuse, no other clause is evaluated "
                "and no holes are reported."
            )
        out += ["", "| clause | holds when | meaning | message |", "|---|---|---|---|"]
        for c in prof.clauses:
            holds = f"`{_cell(pretty(c.holds))}`"
            if c.holes is not None:
                holds += f"<br>holes = `{_cell(pretty(c.holes))}`"
            out.append(f"| `{c.id}` | {holds} | {_cell(c.meaning)} | {_cell(c.message)} |")
    lin = spec.lineage
    if lin is not None:
        out += ["", "#### Summary lineage", "",
                "Compaction k creates summary `S_k`. `SEEN`: the union of `E(S_j)` over the summaries in the "
                "context its summarizer saw whole (`saw`); `KEPT`: over those it keeps beside `S_k` (`keeps`). "
                "`C`, `I` and `TRU` are compaction k's. When it commits, the context is `keeps` and `S_k`.", "",
                "| name | definition | meaning |", "|---|---|---|",
                f"| `E(S_k)` | `{_cell(pretty(lin.effective_coverage))}` | {_cell(lin.effective_coverage_doc)} |",
                f"| `prior_coverage` | `{_cell(pretty(lin.prior_coverage))}` | {_cell(lin.prior_coverage_doc)} |",
                "", f"An unstated `saw` is every summary in the context (`{lin.saw_default}`); an unstated "
                f"`keeps` is none (`{lin.keeps_default}`)."]
    out += ["", END]
    return "\n".join(out)


def splice(document: str, block: str) -> str:
    """Replace the generated block in ``document`` (which must hold both markers)."""
    start = document.find(BEGIN)
    end = document.find(END)
    if start < 0 or end < start:
        raise ValueError("spec/SPEC.md lacks the generated clause-reference markers")
    return document[:start] + block + document[end + len(END):]
