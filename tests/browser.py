"""Open a page in real headless Chromium and report what a person would see: console errors, a screenshot.

Talks the Chrome DevTools Protocol over `--remote-debugging-pipe` (the transport Puppeteer's `pipe: true` uses):
Chromium reads NUL-terminated JSON commands on fd 3 and writes replies and events on fd 4, so no port, no
websocket library and no network are involved. Protocol reference: https://chromedevtools.github.io/devtools-protocol/
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FLAGS = [
    "--headless",
    "--no-sandbox",  # tests run as root, where Chromium's sandbox refuses to start
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
]


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    return None


@dataclass
class PageResult:
    console_errors: list[str] = field(default_factory=list)
    png: bytes = b""
    svg_count: int = 0
    title: str = ""


class _Pipe:
    def __init__(self, proc: subprocess.Popen, write_fd: int, read_fd: int):
        self.proc, self.write_fd, self.read_fd = proc, write_fd, read_fd
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(
        self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30
    ) -> Any:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.write_fd, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read(timeout)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, timeout: float = 30) -> dict[str, Any]:
        for e in self.events:
            if e.get("method") == method:
                return e
        deadline = time.time() + timeout
        while True:
            e = self._read(max(0.1, deadline - time.time()))
            self.events.append(e)
            if e.get("method") == method:
                return e

    def _read(self, timeout: float) -> dict[str, Any]:
        deadline = time.time() + timeout
        while b"\0" not in self.buffer:
            left = deadline - time.time()
            if left <= 0 or self.proc.poll() is not None:
                raise TimeoutError("no answer from Chromium")
            ready, _, _ = select.select([self.read_fd], [], [], min(left, 0.5))
            if ready:
                chunk = os.read(self.read_fd, 1 << 20)
                if not chunk:
                    raise EOFError("Chromium closed the DevTools pipe")
                self.buffer += chunk
        raw, _, self.buffer = self.buffer.partition(b"\0")
        return json.loads(raw)


def _high(fds: tuple[int, int]) -> tuple[int, int]:
    """The pipe's ends moved to fds >= 10, so that placing them at 3 and 4 in the child never closes one."""
    out = tuple(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in fds)
    for fd in fds:
        os.close(fd)
    return out[0], out[1]


def open_page(path: Path, width: int = 1200, timeout: float = 60) -> PageResult:
    """Load `path` (file://) and return console errors, uncaught exceptions, log errors and a full-page PNG."""
    binary = chromium()
    if binary is None:
        raise FileNotFoundError("chromium is not installed (scripts/setup.sh installs it)")
    profile = tempfile.mkdtemp(prefix="rlaunch-chromium-")
    to_child_r, to_child_w = _high(os.pipe())
    from_child_r, from_child_w = _high(os.pipe())
    # The shell moves our pipe ends to fds 3 and 4, where Chromium expects them, then becomes Chromium.
    argv = [
        "bash",  # dash only knows fd numbers 0-9
        "-c",
        f'exec "$0" "$@" 3<&{to_child_r} 4>&{from_child_w} {to_child_r}<&- {from_child_w}>&-',
        binary,
        *FLAGS,
        f"--user-data-dir={profile}",
        "about:blank",
    ]
    proc = subprocess.Popen(
        argv,
        pass_fds=(to_child_r, from_child_w),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    os.close(to_child_r)
    os.close(from_child_w)
    pipe = _Pipe(proc, to_child_w, from_child_r)
    result = PageResult()
    try:
        target = pipe.send("Target.createTarget", {"url": "about:blank"}, timeout=timeout)["targetId"]
        session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            pipe.send(f"{domain}.enable", session=session)
        pipe.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": 800, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        pipe.events.clear()
        pipe.send("Page.navigate", {"url": path.resolve().as_uri()}, session=session)
        pipe.wait_event("Page.loadEventFired", timeout)
        metrics = pipe.send("Page.getLayoutMetrics", session=session)
        height = int(metrics.get("cssContentSize", metrics.get("contentSize", {})).get("height", 800))
        pipe.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": max(height, 200), "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        shot = pipe.send("Page.captureScreenshot", {"format": "png"}, session=session, timeout=timeout)
        result.png = base64.b64decode(shot["data"])
        evaluated = pipe.send(
            "Runtime.evaluate",
            {
                "expression": "[document.querySelectorAll('svg').length, document.title]",
                "returnByValue": True,
            },
            session=session,
        )
        result.svg_count, result.title = evaluated["result"]["value"]
        for e in pipe.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                result.console_errors.append(
                    " ".join(str(a.get("value", "")) for a in params.get("args", []))
                )
            elif method == "Runtime.exceptionThrown":
                result.console_errors.append(str(params.get("exceptionDetails", {}).get("text")))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                result.console_errors.append(str(params["entry"].get("text")))
        with contextlib.suppress(TimeoutError, EOFError):
            pipe.send("Browser.close", timeout=10)
    finally:
        os.close(to_child_w)
        os.close(from_child_r)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        # Chromium ran in its own session: whatever of it is left (zygote, renderer) goes with its group.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        shutil.rmtree(profile, ignore_errors=True)
    return result


def non_blank(png: bytes) -> tuple[int, float]:
    """(distinct colours, share of pixels that are not the background) of a screenshot."""
    import io

    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    small = image.resize((max(1, image.width // 4), max(1, image.height // 4)))
    raw = small.tobytes()
    pixels = [raw[i : i + 3] for i in range(0, len(raw), 3)]
    background = max(set(pixels), key=pixels.count)
    return len(set(pixels)), sum(p != background for p in pixels) / len(pixels)
