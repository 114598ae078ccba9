"""The ``--profile`` option of ``check`` and ``audit`` (single log and fleet): defined and
checked once, so the commands name and reject a profile the same way."""

from __future__ import annotations

import argparse

from tailguard._generated.checker import PROFILES


def add_profile_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", default="strict",
                        help="seed, strict or partitioned (default strict; partitioned for pipelines "
                             "whose summarizer sees the candidates but not the kept tail)")


def profile_problem(profile: str) -> str | None:
    """Why ``profile`` is not one the checker knows (the message after ``PROG: ``), or None."""
    if profile in PROFILES:
        return None
    return f"--profile: unknown profile {profile!r}; choose one of {', '.join(PROFILES)}"
