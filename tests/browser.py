"""Headless Chromium (Debian's ``/usr/bin/chromium``) driven over the DevTools protocol.

Small on purpose: start the browser with a fresh profile, open the page target's
WebSocket, and offer navigate / evaluate / click-and-wait / screenshot.
"""

from __future__ import annotations

import base64
import contextlib
import json
import struct
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
from websockets.sync.client import ClientConnection, connect

CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)
WIDTH, HEIGHT = 1280, 900


class Browser:
    def __init__(self, profile: Path, *, timeout_s: float = 30.0) -> None:
        self.timeout_s = timeout_s
        profile.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [
                CHROMIUM,
                *FLAGS,
                f"--user-data-dir={profile}",
                "--remote-debugging-port=0",
                f"--window-size={WIDTH},{HEIGHT}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._id = 0
        self._events: list[dict[str, Any]] = []
        self._stack = contextlib.ExitStack()
        try:
            port = self._devtools_port(profile / "DevToolsActivePort")
            targets = httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json()
            page = next(t for t in targets if t["type"] == "page")
            self.ws: ClientConnection = self._stack.enter_context(
                connect(page["webSocketDebuggerUrl"], max_size=None, open_timeout=10)
            )
            self.send("Page.enable")
            self.send(
                "Emulation.setDeviceMetricsOverride",
                width=WIDTH,
                height=HEIGHT,
                deviceScaleFactor=1,
                mobile=False,
            )
        except BaseException:
            self.close()
            raise

    def _devtools_port(self, path: Path) -> int:
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.proc.returncode}")
            try:
                return int(path.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                time.sleep(0.05)
        raise TimeoutError("chromium did not open its DevTools port")

    def _recv(self) -> dict[str, Any]:
        message: dict[str, Any] = json.loads(self.ws.recv(timeout=self.timeout_s))
        return message

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            message = self._recv()
            if message.get("id") == self._id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self._events.append(message)

    def _wait_load(self) -> None:
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            for i, event in enumerate(self._events):
                if event.get("method") == "Page.loadEventFired":
                    del self._events[: i + 1]
                    return
            self._events.append(self._recv())
        raise TimeoutError("the page did not load")

    def navigate(self, url: str) -> None:
        self._events.clear()
        self.send("Page.navigate", url=url)
        self._wait_load()

    def eval(self, expression: str) -> Any:
        result = self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def act_and_wait(self, expression: str) -> None:
        """Run JS that navigates (a click on a submit button, a form submit) and wait for
        the next page to load."""
        self._events.clear()
        self.eval(expression)
        self._wait_load()

    def screenshot(self, path: Path) -> bytes:
        data = base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"])
        path.write_bytes(data)
        return data

    def resize(self, width: int, height: int = HEIGHT) -> None:
        """Lay pages out as a screen ``width`` CSS pixels wide (a phone below ~600)."""
        self.send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=width < 600,
        )

    def close(self) -> None:
        self._stack.close()
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def png_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk; ValueError if it is not a PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise ValueError("not a PNG")
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)
