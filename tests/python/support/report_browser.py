"""Check report.html the way a reader's browser sees it: headless Chromium over the DevTools Protocol.

Stdlib only: Chromium is started with `--remote-debugging-pipe`, which speaks CDP as
NUL-separated JSON over file descriptors 3 (commands in) and 4 (replies and events out),
so no websocket client or browser-automation package is needed.

For each page it records console errors, uncaught exceptions, browser log errors, every
request that is not `file:` or `data:` (a self-contained report makes none), and each
<img> with its natural size after decoding. Optionally it saves a full-page screenshot.

Usage (a developer's check of a page by hand; tests/python/test_report.py calls check_pages):
    python tests/python/support/report_browser.py reports/report.html [--screenshot page.png]
"""

from __future__ import annotations

import argparse
import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
TIMEOUT_SEC = 20.0
# scripts/test.sh installs Chromium in the background when the machine lacks it and names here the
# file it writes when the install ends ("ok" or "failed"); the browser test waits for it
INSTALL_STATUS_ENV_VAR = "RUN_DIAGNOSIS_BROWSER_INSTALL"
INSTALL_WAIT_SEC = 900.0  # apt's index and Chromium's packages, on a slow mirror
SETTLE_SEC = 0.3  # after load, how long to keep collecting late console/log events
CHROMIUM_FLAGS = (
    "--headless",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--window-size=1200,900",
)
IMAGES_JS = """
(async () => {
  await Promise.all([...document.images].map(img => img.decode().catch(() => null)));
  return [...document.images].map(img => ({
    id: img.id, alt: img.alt, complete: img.complete,
    naturalWidth: img.naturalWidth, naturalHeight: img.naturalHeight,
  }));
})()
"""


class BrowserError(RuntimeError):
    """Chromium could not be started or stopped answering."""


@dataclass
class PageCheck:
    """What a browser saw when loading one page."""

    url: str
    console_errors: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)
    images: list[dict[str, Any]] = field(default_factory=list)
    title: str = ""

    @property
    def broken_images(self) -> list[dict[str, Any]]:
        return [img for img in self.images if not img.get("naturalWidth")]


class CdpPipe:
    """A minimal Chrome DevTools Protocol client over Chromium's debugging pipe."""

    def __init__(self, read_fd: int, write_fd: int, timeout: float) -> None:
        self.read_fd, self.write_fd, self.timeout = read_fd, write_fd, timeout
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([self.read_fd], [], [], max(remaining, 0))
            if not ready:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self.read_fd, 1 << 16)
            if not chunk:
                raise BrowserError("Chromium closed the debugging pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        """Send a command and wait for its reply, keeping the events that arrive meanwhile."""
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.write_fd, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise BrowserError(f"{method} failed: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float) -> None:
        """Wait until an event `method` arrives (or was already received)."""
        if any(e.get("method") == method for e in self.events):
            return
        deadline = time.monotonic() + timeout
        while True:
            event = self._read_message(deadline)
            self.events.append(event)
            if event.get("method") == method:
                return

    def drain(self, seconds: float) -> None:
        """Collect events for a short while."""
        deadline = time.monotonic() + seconds
        try:
            while True:
                self.events.append(self._read_message(deadline))
        except TimeoutError:
            return


@contextmanager
def chromium(executable: Path = CHROMIUM, timeout: float = TIMEOUT_SEC) -> Iterator[CdpPipe]:
    """Start headless Chromium with a fresh profile, yield a CDP client, always stop it."""
    if not executable.exists():
        raise BrowserError(f"no Chromium at {executable}")
    profile = tempfile.mkdtemp(prefix="report-chromium-")
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()

    def child_fds() -> None:  # runs in the child: commands on fd 3, replies on fd 4
        commands = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
        replies = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
        os.dup2(commands, 3)
        os.dup2(replies, 4)

    flags = [*CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        flags.insert(0, "--no-sandbox")
    log = tempfile.TemporaryFile()  # noqa: SIM115 (closed in the finally below)
    process = subprocess.Popen(
        [str(executable), *flags],
        pass_fds=(3, 4),
        preexec_fn=child_fds,  # fd plumbing must run in the child, before exec
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
    )
    os.close(to_browser_r)
    os.close(from_browser_w)
    client = CdpPipe(from_browser_r, to_browser_w, timeout)
    try:
        yield client
    except (TimeoutError, BrowserError) as exc:
        log.seek(0)
        tail = log.read().decode(errors="replace")[-2000:]
        raise BrowserError(f"{exc}; Chromium output:\n{tail}") from exc
    finally:
        with suppress(TimeoutError, BrowserError, OSError):
            client.call("Browser.close")
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
        os.close(from_browser_r)
        os.close(to_browser_w)
        log.close()
        shutil.rmtree(profile, ignore_errors=True)


def _console_errors(events: list[dict[str, Any]], session: str) -> list[str]:
    errors: list[str] = []
    for event in events:
        if event.get("sessionId") != session:
            continue
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            args = [str(a.get("value", a.get("description", ""))) for a in params.get("args", [])]
            errors.append("console." + params["type"] + ": " + " ".join(args))
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            errors.append(
                "exception: " + str(details.get("exception", {}).get("description") or details.get("text"))
            )
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            errors.append(
                f"log ({entry.get('source')}): {entry.get('text')} {entry.get('url') or ''}".strip()
            )
    return errors


def _external_requests(events: list[dict[str, Any]], session: str) -> list[str]:
    urls = [
        str(e.get("params", {}).get("request", {}).get("url", ""))
        for e in events
        if e.get("sessionId") == session and e.get("method") == "Network.requestWillBeSent"
    ]
    return [u for u in urls if not u.startswith(("file:", "data:"))]


def check_page(client: CdpPipe, page: Path, screenshot: Path | None = None) -> PageCheck:
    """Open `page` in a new tab, wait for load and image decoding, report what happened."""
    url = page.resolve().as_uri()
    target = client.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = client.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Page", "Runtime", "Log", "Network"):
        client.call(f"{domain}.enable", session=session)
    client.events.clear()
    client.call("Page.navigate", {"url": url}, session=session)
    client.wait_for("Page.loadEventFired", client.timeout)
    evaluated = client.call(
        "Runtime.evaluate",
        {"expression": IMAGES_JS, "awaitPromise": True, "returnByValue": True},
        session=session,
    )
    title = client.call(
        "Runtime.evaluate", {"expression": "document.title", "returnByValue": True}, session=session
    )
    client.drain(SETTLE_SEC)
    if screenshot is not None:
        shot = client.call(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session=session
        )
        screenshot.write_bytes(base64.b64decode(shot["data"]))
    result = PageCheck(
        url=url,
        console_errors=_console_errors(client.events, session),
        external_requests=_external_requests(client.events, session),
        images=list(evaluated.get("result", {}).get("value") or []),
        title=str(title.get("result", {}).get("value", "")),
    )
    client.call("Target.closeTarget", {"targetId": target})
    return result


def browser_installed(executable: Path = CHROMIUM, wait: float = INSTALL_WAIT_SEC) -> bool:
    """Whether the browser is there, once an install scripts/test.sh runs in the background has ended."""
    status = os.environ.get(INSTALL_STATUS_ENV_VAR)
    if status:
        deadline = time.monotonic() + wait
        while not Path(status).exists() and time.monotonic() < deadline:
            time.sleep(1.0)
    return executable.exists()


def check_pages(pages: Sequence[Path], executable: Path = CHROMIUM) -> list[PageCheck]:
    """Check several pages with one browser."""
    with chromium(executable) as client:
        return [check_page(client, page) for page in pages]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Load a report page in headless Chromium and check it.")
    parser.add_argument("page", type=Path, help="HTML file to load")
    parser.add_argument("--screenshot", type=Path, help="save a full-page PNG screenshot here")
    parser.add_argument(
        "--chromium", type=Path, default=CHROMIUM, help=f"browser binary (default {CHROMIUM})"
    )
    args = parser.parse_args(argv)
    with chromium(args.chromium) as client:
        result = check_page(client, args.page, args.screenshot)
    print(f"{result.url}: title {result.title!r}, {len(result.images)} images")
    problems = [*result.console_errors, *(f"external request: {u}" for u in result.external_requests)]
    problems += [f"image not rendered: {img.get('id') or img.get('alt')}" for img in result.broken_images]
    for problem in problems:
        print(f"  problem: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
