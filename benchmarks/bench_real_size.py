"""Real-size policies (issue 26 item 5): chatty and tool-heavy families, every verdict timed.

Run: ``python benchmarks/bench_real_size.py`` (decides every policy in this process, each in
a z3 context of its own, at check-config's default budget unless ``--budget N``; prints one
line per policy, then the verdict counts, the number of unknowns, the max and median CPU
seconds of a decision, how many took over 10 s and over 1 s of CPU, and the replay check of
every unsafe trace through the executable model). ``--count N`` generates N policies
(default 200), ``--seed S`` another deterministic family (default 26), ``--every K`` decides
every K-th only (iteration: ``--every 5`` is 40 of the 200), ``--write DIR`` writes the TOML
files instead (what ``tailguard check-config DIR/*.toml`` reads), ``--shape NAME`` one shape only.

The generator (seeded, deterministic): model windows of 32k, 64k, 128k, 200k, 400k and 1M
tokens; chatty turns (at most 500, 1,000 or 2,000 tokens) and tool-heavy ones (5,000, 8,000
or 20,000), of 1 to 6 messages; floors in tokens, messages or turns; base prompts of 1,000 to
8,000 tokens; seven shapes, the five of the 40-policy grid (``grid_check_config.py``) and
truncate-then-compact with keeps of tens of thousands of tokens, and a mixed one:

- ``langchain-trim``: compact at a fraction of the window, keep the newest 20 messages,
  the summarizer shown the newest 4,000 tokens (``summary = "message"``, ``clip``);
- ``langchain-window``: the same without the trim, then a token truncator at the window;
- ``seed-repaired``: truncate at the window, then compact at 80% keeping 30% in tokens,
  ``input = "all"``;
- ``compact-then-truncate``: compact at 75% keeping 25% in tokens, then truncate at the window;
- ``codex-like``: truncate at 95%, then compact at 90% keeping the newest 8 turns;
- ``truncate-then-compact``: truncate at the window, then compact at a trigger drawn near the
  boundary ``window - turn_max + 1`` (one side or the other, so about half are safe by a
  hair and half fail at the first turn that crosses it), keeping 20,000 to 90,000 tokens;
  the shape of the four held-out policies a user found ``unknown``;
- ``mixed``: a compact stage keeping tokens, messages or turns, either summary placement, an
  input limit or none, before, after or without a truncator in tokens or messages.

Each shape's knobs are jittered (fractions, keeps, floors, summary sizes) so that boundary
cases on both sides occur. Times are CPU seconds of this process (``time.process_time``):
the machine is shared, wall time says more about the neighbours than about the checker.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

WINDOWS = (32_000, 64_000, 128_000, 200_000, 400_000, 1_000_000)
CHATTY = (500, 1_000, 2_000)
TOOL_HEAVY = (5_000, 8_000, 20_000)
SHAPES = ("langchain-trim", "langchain-window", "seed-repaired", "compact-then-truncate",
          "codex-like", "truncate-then-compact", "mixed")


def _stage(**knobs: object) -> str:
    body = "\n".join(f"{k} = {json.dumps(v)}" for k, v in knobs.items())
    return f"\n[[stage]]\n{body}\n"


def _floor(rng: random.Random, w: int, turn_max: int, mhi: int) -> tuple[str, int]:
    unit = rng.choice(("tokens", "tokens", "messages", "turns"))
    if unit == "tokens":
        return unit, rng.choice((1_000, 4_000, turn_max, w // 20, w // 10, w // 5))
    if unit == "messages":
        return unit, rng.choice((4, 8, 20, 40, 4 * mhi))
    return unit, rng.choice((2, 5, 8, 20))


def _mixed(rng: random.Random, w: int, turn_max: int, summary: int) -> str:
    """A compact stage with any keep unit, placement and input limit, before, after or
    without a truncator in tokens or messages."""
    keep_unit = rng.choice(("tokens", "messages", "turns"))
    keep = {"tokens": rng.randint(min(turn_max, w // 4), w // 2), "messages": rng.randint(2, 60),
            "turns": rng.randint(1, 30)}[keep_unit]
    knobs: dict[str, object] = {"kind": "compact", "trigger_unit": "tokens",
                                "trigger": rng.randint(w // 2, w), "keep_unit": keep_unit,
                                "keep": keep, "summary_tokens": summary}
    if rng.random() < 0.4:
        knobs["summary"] = "message"
    if rng.random() < 0.3:
        knobs["input_limit"] = rng.choice((4_000, w // 4, w))
    if rng.random() < 0.3:
        truncate = _stage(kind="truncate", unit="messages", limit=rng.randint(50, 2_000))
    else:
        truncate = _stage(kind="truncate", unit="tokens", limit=max(w // 2, w - rng.randint(0, 3 * turn_max)))
    order = rng.random()
    compact = _stage(**knobs)
    return truncate + compact if order < 0.4 else compact + truncate if order < 0.8 else compact


def policy_text(index: int, rng: random.Random, shape: str | None = None) -> tuple[str, str]:
    """(file name, TOML) of one generated policy."""
    shape = shape or SHAPES[index % len(SHAPES)]
    w = rng.choice(WINDOWS)
    chatty = rng.random() < 0.5
    turn_max = rng.choice(CHATTY if chatty else TOOL_HEAVY)
    turn_min = rng.choice((1, 1, turn_max // 10 or 1))
    mhi = rng.randint(1, 6) if not chatty else rng.randint(1, 3)
    base = rng.choice((1_000, 2_000, 4_000, 8_000))
    summary = rng.choice((1_000, 1_500, 2_000, 4_000))
    floor_unit, floor = _floor(rng, w, turn_max, mhi)
    name = f"{index:03d}-{shape}-{w // 1000}k-{turn_max}"
    head = (f'name = "{name}"\nwindow = {w}\nbase_tokens = {base}\nturn_tokens = [{turn_min}, {turn_max}]\n'
            f"messages_per_turn = [1, {mhi}]\nfloor = {floor}\nfloor_unit = \"{floor_unit}\"\n")
    if shape == "langchain-trim":
        body = _stage(kind="compact", trigger_unit="tokens", trigger=w * rng.choice((75, 80, 85, 90)) // 100,
                      keep_unit="messages", keep=rng.choice((10, 20, 40)), summary_tokens=summary,
                      input_limit=rng.choice((4_000, 16_000, w // 2)), summary="message", clip=True)
    elif shape == "langchain-window":
        body = _stage(kind="compact", trigger_unit="tokens", trigger=w * rng.choice((80, 85, 90)) // 100,
                      keep_unit="messages", keep=rng.choice((10, 20, 40)), summary_tokens=summary,
                      summary="message") + _stage(kind="truncate", unit="tokens", limit=w)
    elif shape == "seed-repaired":
        body = _stage(kind="truncate", unit="tokens", limit=w) + _stage(
            kind="compact", trigger_unit="tokens", trigger=w * rng.choice((70, 80, 90)) // 100,
            keep_unit="tokens", keep=w * rng.choice((2, 3)) // 10, summary_tokens=summary, input="all")
    elif shape == "compact-then-truncate":
        body = _stage(kind="compact", trigger_unit="tokens", trigger=w * rng.choice((3, 4)) // 5,
                      keep_unit="tokens", keep=w // rng.choice((4, 5)), summary_tokens=summary) + _stage(
            kind="truncate", unit="tokens", limit=w)
    elif shape == "codex-like":
        body = _stage(kind="truncate", unit="tokens", limit=w * 95 // 100) + _stage(
            kind="compact", trigger_unit="tokens", trigger=w * 9 // 10, keep_unit="turns",
            keep=rng.choice((4, 8, 16)), summary_tokens=summary)
    elif shape == "mixed":
        body = _mixed(rng, w, turn_max, summary)
    else:  # truncate-then-compact near the boundary window - turn_max + 1
        edge = w - turn_max + 1
        trigger = edge + rng.choice((-1000, -1, 0, 1, 2, 100))
        keep = min(rng.choice((20_000, 30_000, 45_000, 60_000, 90_000)), trigger // 2)
        floor_unit, floor = rng.choice((("tokens", 1_000), ("tokens", keep // 2), ("messages", 8),
                                        ("tokens", keep - turn_max + 2), ("turns", 4)))
        head = (f'name = "{name}"\nwindow = {w}\nbase_tokens = {base}\nturn_tokens = [{turn_min}, {turn_max}]\n'
                f"messages_per_turn = [1, {mhi}]\nfloor = {floor}\nfloor_unit = \"{floor_unit}\"\n")
        body = _stage(kind="truncate", unit="tokens", limit=w) + _stage(
            kind="compact", trigger_unit="tokens", trigger=trigger, keep_unit="tokens", keep=keep,
            summary_tokens=summary)
    return f"{name}.toml", head + body


def generate(count: int, seed: int, shape: str | None = None) -> list[tuple[str, str]]:
    """``count`` policies, a deterministic function of ``seed``."""
    rng = random.Random(seed)
    return [policy_text(i, rng, shape) for i in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--shape", choices=SHAPES)
    parser.add_argument("--budget", type=int)
    parser.add_argument("--write", metavar="DIR")
    args = parser.parse_args()
    policies = generate(args.count, args.seed, args.shape)[:: args.every]
    if args.write:
        directory = Path(args.write)
        directory.mkdir(parents=True, exist_ok=True)
        for name, text in policies:
            (directory / name).write_text(text, encoding="utf-8")
        print(f"wrote {len(policies)} policies to {directory}")
        return
    from tailguard.pipeline.model import replay
    from tailguard.pipeline.policy import parse_policy
    from tailguard.pipeline.solver import Budget, decide

    budget = Budget.of(args.budget) if args.budget else Budget()
    cpu: list[float] = []
    verdicts: dict[str, int] = {}
    methods: dict[str, int] = {}
    replayed = bad_replays = 0
    print(f"{'policy':44} {'verdict':8} {'cpu s':>7}  method / reason")
    for name, text in policies:
        policy = parse_policy(text, name)
        start = time.process_time()
        d = decide(policy, budget)
        cpu.append(time.process_time() - start)
        verdicts[d.verdict] = verdicts.get(d.verdict, 0) + 1
        how = d.method.split(":")[0].split(" (")[0].split(" depth")[0] if d.method else "unknown"
        methods[how] = methods.get(how, 0) + 1
        tail = ""
        if d.verdict == "unsafe":
            found, at = replay(policy, d.trace, "partitioned", d.messages, frozenset(d.failures))
            ok = at == len(d.trace) and bool(found)
            replayed += ok
            bad_replays += not ok
            tail = f" ({len(d.trace)} appends, replay {'ok' if ok else 'FAILED'})"
        print(f"{name[:-5]:44} {d.verdict:8} {cpu[-1]:7.2f}  {d.method or d.detail}{tail}", flush=True)
    print()
    print(f"policies: {len(policies)}; verdicts: {json.dumps(verdicts, sort_keys=True)}; "
          f"unknown: {verdicts.get('unknown', 0)}")
    print(f"methods: {json.dumps(methods, sort_keys=True)}")
    print(f"decision cpu seconds: max {max(cpu):.2f}, median {statistics.median(cpu):.3f}, "
          f"mean {statistics.mean(cpu):.3f}, total {sum(cpu):.1f}; over 10 s: "
          f"{sum(c > 10 for c in cpu)}, over 1 s: {sum(c > 1 for c in cpu)}")
    unsafe = verdicts.get("unsafe", 0)
    print(f"unsafe traces replayed through the model: {replayed} of {unsafe} reproduce their loss"
          f"{'' if not bad_replays else f'; {bad_replays} FAILED'}")


if __name__ == "__main__":
    main()
