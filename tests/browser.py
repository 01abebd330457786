"""A real headless browser for tests: Debian's chromium, driven over the DevTools protocol (websocket-client).

`open_page(path)` loads a file, collects console messages and uncaught exceptions, measures elements and
saves a screenshot; no Playwright/Selenium download (CI has no network but the package registries)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise RuntimeError("no chromium on PATH: `slurmtools lab up` installs Debian's chromium package")


class Page:
    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        my = self.next_id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return dict(msg.get("result") or {})
            self.events.append(msg)

    def evaluate(self, expression: str) -> Any:
        res = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in res:
            raise RuntimeError(f"evaluate failed: {res['exceptionDetails']}")
        return res["result"].get("value")

    def console_errors(self) -> list[str]:
        out = []
        for ev in self.events:
            m, p = ev.get("method"), ev.get("params") or {}
            if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif m == "Runtime.exceptionThrown":
                out.append(str(p.get("exceptionDetails", {}).get("text")))
            elif m == "Log.entryAdded" and (p.get("entry") or {}).get("level") == "error":
                out.append(str(p["entry"].get("text")))
        return out


def open_page(path: Path, screenshot: Path, *, timeout: float = 60.0) -> tuple[Page, Any]:
    """Load PATH in headless chromium; returns the page and a closer. Saves a full-page PNG to SCREENSHOT."""
    import websocket  # websocket-client

    profile = tempfile.mkdtemp(prefix="slurmtools-chromium-")
    proc = subprocess.Popen(
        [chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--no-first-run", "--disable-extensions", "--disable-background-networking", f"--user-data-dir={profile}",
         "--remote-debugging-port=0", "--remote-allow-origins=*", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    port_file = Path(profile) / "DevToolsActivePort"
    deadline = time.monotonic() + timeout
    while not port_file.exists() or not port_file.read_text().strip():
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise RuntimeError(f"chromium did not start (rc {proc.poll()})")
        time.sleep(0.1)
    port = int(port_file.read_text().split()[0])
    targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
    page_t = next(t for t in targets if t.get("type") == "page")
    ws = websocket.create_connection(page_t["webSocketDebuggerUrl"], timeout=timeout, suppress_origin=True)
    page = Page(ws)
    page.call("Runtime.enable")
    page.call("Log.enable")
    page.call("Page.enable")
    page.call("Page.navigate", url=path.resolve().as_uri())
    while page.evaluate("document.readyState") != "complete":
        if time.monotonic() > deadline:
            raise RuntimeError("page did not load")
        time.sleep(0.05)
    size = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
    page.call("Emulation.setDeviceMetricsOverride", width=int(size[0]), height=min(int(size[1]), 16000),
              deviceScaleFactor=1, mobile=False)
    shot = page.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
    screenshot.write_bytes(base64.b64decode(shot["data"]))

    def close() -> None:
        try:
            ws.close()
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
            shutil.rmtree(profile, ignore_errors=True)

    return page, close


if __name__ == "__main__":   # python tests/browser.py report.html shot.png
    import sys

    pg, done = open_page(Path(sys.argv[1]), Path(sys.argv[2]))
    print(pg.console_errors(), os.path.getsize(sys.argv[2]))
    done()
