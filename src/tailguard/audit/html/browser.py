"""A headless Chromium driven over the DevTools protocol on a pipe (tests and screenshots).

Standard library only: Chromium's ``--remote-debugging-pipe`` reads commands from its fd 3
and writes replies to its fd 4, NUL-separated JSON, so no websocket client is needed. Used
by ``tests/test_html_report_browser.py`` and ``tools/html_screenshots.py`` to load a report
from disk, read the rendered DOM, collect console errors, failed loads and every request the
page made, and take a full-page screenshot. Never imported by the report writer itself.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tailguard.base.errors import BrowserError as BrowserError

__all__ = ["FLAGS", "Browser", "BrowserError", "Loaded", "find_chromium"]

#: the flags Chromium needs on these machines (a closed network, no GPU, root)
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--hide-scrollbars", "--force-device-scale-factor=1", "--font-render-hinting=none",
)


def _above(fd: int, low: int = 10) -> int:
    """``fd`` moved to a number >= ``low`` (the original is closed)."""
    new = fcntl.fcntl(fd, fcntl.F_DUPFD, low)
    os.close(fd)
    return new


def find_chromium() -> str | None:
    """The Chromium binary (``$CHROMIUM``, else chromium/chromium-browser on PATH), or None."""
    env = os.environ.get("CHROMIUM")
    if env:
        return env if os.access(env, os.X_OK) else None
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class Loaded:
    """What a page load left behind."""

    url: str
    value: Any  # the result of the probe expression
    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    png: bytes = b""


class Browser:
    """One headless Chromium process; use as a context manager."""

    def __init__(self, binary: str, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="tailguard-chromium-")
        cmd_r, self._cmd_w = os.pipe()
        self._out_r, out_w = os.pipe()
        # move the child's ends above 4 so that the redirections below cannot clobber them
        cmd_r, out_w = (_above(fd) for fd in (cmd_r, out_w))
        args = [binary, *FLAGS, f"--user-data-dir={self._profile}", "--remote-debugging-pipe", "about:blank"]
        shell = (f"exec {shlex.join(args)} 3<&{cmd_r} 4>&{out_w} {cmd_r}<&- {out_w}>&-")
        self._proc = subprocess.Popen([shutil.which("bash") or "/bin/bash", "-c", shell], pass_fds=(cmd_r, out_w),
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(out_w)
        self._buf = b""
        self._next = 0
        self._events: list[dict[str, Any]] = []

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(BrowserError, OSError):
            self.send("Browser.close", wait=False)
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        for fd in (self._cmd_w, self._out_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self._profile, ignore_errors=True)

    # -- protocol ----------------------------------------------------------------

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("timed out waiting for Chromium")
            ready, _, _ = select.select([self._out_r], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._out_r, 1 << 20)
            if not chunk:
                raise BrowserError(f"Chromium exited (code {self._proc.poll()})")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        msg: dict[str, Any] = json.loads(raw)
        return msg

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             *, wait: bool = True) -> dict[str, Any]:
        self._next += 1
        ident = self._next
        msg: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        if not wait:
            return {}
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == ident:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self._events.append(reply)

    def _wait_event(self, name: str, session: str) -> None:
        deadline = time.monotonic() + self.timeout
        if any(e.get("method") == name and e.get("sessionId") == session for e in self._events):
            return
        while True:
            ev = self._read_message(deadline)
            self._events.append(ev)
            if ev.get("method") == name and ev.get("sessionId") == session:
                return

    # -- the one thing the tests need ----------------------------------------------

    def load(self, path: Path, probe: str, *, width: int = 1240, screenshot: bool = True,
             max_height: int = 0) -> Loaded:
        """Open ``path`` in a fresh tab, evaluate ``probe`` (JS, returned by value), and take a
        full-page screenshot; collect console errors, exceptions, failed loads and requests."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=session)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False}, session)
        self._events = []
        url = path.resolve().as_uri()
        self.send("Page.navigate", {"url": url}, session)
        self._wait_event("Page.loadEventFired", session)
        value = self.send("Runtime.evaluate", {"expression": probe, "returnByValue": True,
                                               "awaitPromise": True}, session)
        if "exceptionDetails" in value:
            raise BrowserError(f"probe failed: {value['exceptionDetails']}")
        png = b""
        if screenshot:
            metrics = self.send("Page.getLayoutMetrics", session=session)
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            height = int(size["height"])
            clip = {"x": 0, "y": 0, "width": max(width, int(size["width"])),
                    "height": min(height, max_height) if max_height else height, "scale": 1}
            shot = self.send("Page.captureScreenshot",
                             {"format": "png", "clip": clip, "captureBeyondViewport": True}, session)
            png = base64.b64decode(shot["data"])
        loaded = Loaded(url, value.get("result", {}).get("value"), png=png)
        for ev in self._events:
            if ev.get("sessionId") != session:
                continue
            method, params = ev.get("method"), ev.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert", "warning"):
                args = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
                loaded.console_errors.append(f"console.{params['type']}: {args}")
            elif method == "Runtime.exceptionThrown":
                loaded.console_errors.append(f"exception: {params.get('exceptionDetails', {}).get('text')}")
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") in ("error", "warning"):
                entry = params["entry"]
                loaded.console_errors.append(f"log {entry.get('level')}: {entry.get('text')} {entry.get('url', '')}")
            elif method == "Network.requestWillBeSent":
                loaded.requests.append(str(params.get("request", {}).get("url", "")))
            elif method == "Network.loadingFailed":
                loaded.console_errors.append(f"load failed: {params.get('errorText')}")
        self.send("Target.closeTarget", {"targetId": target})
        return loaded
