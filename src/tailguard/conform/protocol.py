"""The conformance line protocol, and a child process that speaks it.

tailguard writes one request per line on the implementation's stdin::

    {"profile": "strict", "case": {...the tailguard check fields...}}

(the case is sent as the vector's exact JSON text) and reads exactly one response line from
its stdout: a decision,

    {"decision": "allow" | "refuse", "failed": ["clause", ...], "holes": [[lo, hi], ...]}

or, for a case it cannot read (unusable input, SPEC.md section 3.1; the ``inputs`` vectors),
the error answer ``{"error": "<field>: <reason>"}``. Anything else on stdout, an exit, or no answer within the
per-case timeout means the implementation is not speaking the protocol: the run stops. An
answer is read strictly (:mod:`tailguard.base.jsonstrict`): a line that is not UTF-8, longer than
:data:`~tailguard.base.jsonstrict.MAX_ANSWER_BYTES`, nested too deep, with a huge integer or a
repeated key is garbage, reported as such (never as a hang).
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from collections.abc import Sequence
from typing import IO, Any

from tailguard.base import jsonstrict
from tailguard.base.errors import ProtocolFailure as ProtocolFailure
from tailguard.base.jsonstrict import MAX_ANSWER_BYTES

Response = dict[str, Any]


def request_line(profile: str, case_text: str) -> str:
    """One request; ``case_text`` is put in verbatim (it may be unusable on purpose)."""
    return f'{{"profile":{json.dumps(profile)},"case":{case_text}}}'


def parse_response(line: str) -> Response:
    """Validate one response line; :class:`ProtocolFailure` (garbage) when it is not one."""
    try:
        value = jsonstrict.loads(line)
    except jsonstrict.JSONInputError as exc:
        reason = exc.reason.removeprefix("invalid JSON: ")
        raise ProtocolFailure("garbage", f"response is not JSON ({reason}): {line[:200]!r}") from None
    if not isinstance(value, dict):
        raise ProtocolFailure("garbage", f"response is not a JSON object: {line[:200]!r}")
    if "error" in value and "decision" not in value:
        if not isinstance(value["error"], str):
            raise ProtocolFailure("garbage", f"'error' must be a string: {line[:200]!r}")
        return value
    if value.get("decision") not in ("allow", "refuse"):
        raise ProtocolFailure("garbage", f"'decision' must be \"allow\" or \"refuse\": {line[:200]!r}")
    failed = value.get("failed", [])
    if not (isinstance(failed, list) and all(isinstance(x, str) for x in failed)):
        raise ProtocolFailure("garbage", f"'failed' must be a list of clause ids: {line[:200]!r}")
    holes = value.get("holes", [])
    if not (isinstance(holes, list) and all(
            isinstance(h, list) and len(h) == 2 and all(type(x) is int for x in h) for h in holes)):
        raise ProtocolFailure("garbage", f"'holes' must be a list of [lo, hi] integer pairs: {line[:200]!r}")
    return value


class Child:
    """An implementation under test, started once and asked one case at a time."""

    def __init__(self, command: Sequence[str], *, timeout: float) -> None:
        self.command, self.timeout = list(command), timeout
        try:
            self.proc = subprocess.Popen(  # bytes: an answer that is not UTF-8 is garbage, not a crash
                self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )
        except OSError as exc:
            raise ProtocolFailure("crash", f"cannot start {self.command[0]!r}: {exc}") from None
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr: list[str] = []
        assert self.proc.stdout is not None and self.proc.stderr is not None
        threading.Thread(target=self._pump, args=(self.proc.stdout, self._lines), daemon=True).start()
        threading.Thread(target=self._drain, args=(self.proc.stderr,), daemon=True).start()

    @staticmethod
    def _pump(stream: IO[bytes], out: queue.Queue[bytes | None]) -> None:
        try:
            while True:
                line = stream.readline(MAX_ANSWER_BYTES + 1)  # never more than the limit in memory
                if not line:
                    break
                out.put(line)
                if len(line) > MAX_ANSWER_BYTES:
                    break  # the reader stops here; ask() reports it
        except (OSError, ValueError):  # the pipe went away
            pass
        out.put(None)

    def _drain(self, stream: IO[bytes]) -> None:
        try:
            while True:
                line = stream.readline(1 << 16)
                if not line:
                    break
                self._stderr.append(line.decode("utf-8", "replace"))
                del self._stderr[:-20]
        except (OSError, ValueError):
            pass

    def stderr_tail(self) -> str:
        return "".join(self._stderr[-20:]).rstrip()

    def ask(self, profile: str, case_text: str) -> Response:
        self.send(request_line(profile, case_text) + "\n")
        return parse_response(self.read_line())

    def send(self, text: str) -> None:
        """Write ``text`` (whole lines) to the implementation's stdin and flush."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(text.encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise ProtocolFailure("crash", self._exit_text()) from None

    def read_line(self) -> str:
        """The next line the implementation wrote, decoded and stripped; :class:`ProtocolFailure`
        when it exits, hangs past the timeout, or writes a line that is not UTF-8 or over the limit."""
        try:
            line = self._lines.get(timeout=self.timeout)
        except queue.Empty:
            raise ProtocolFailure("hang", f"no response within {self.timeout:g} s") from None
        if line is None:
            raise ProtocolFailure("crash", self._exit_text())
        if len(line) > MAX_ANSWER_BYTES:
            raise ProtocolFailure("garbage", f"an answer line over the limit of {MAX_ANSWER_BYTES:,} bytes: "
                                  f"{line[:100]!r}...")
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolFailure("garbage", f"response is not UTF-8 (byte {exc.start + 1}): {line[:200]!r}") from None
        return text.strip()

    def _exit_text(self) -> str:
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        text = "the implementation closed its stdout" if code is None else f"the implementation exited with {code}"
        tail = self.stderr_tail()
        return f"{text}; its stderr ends with:\n{tail}" if tail else text

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
