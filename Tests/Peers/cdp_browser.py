#!/usr/bin/env python3
"""Drives headless Chromium over the Chrome DevTools Protocol for the browser tests.

    cdp_browser.py ACTIONS.json        (or '-' to read the actions from stdin)

ACTIONS is a JSON array run in order, in one page:
    {"open": "http://127.0.0.1:5665/", "width": 1280, "height": 800}   navigate and wait for the load event
    {"wait": "<js expression>", "timeout": 10}                          poll (every 100 ms) until it is truthy
    {"sleep": 2.5}                                                      wait this many seconds
    {"eval": "<js expression>", "as": "name"}                           keep its (JSON) value under "name"
    {"screenshot": "out.png", "clip": [x, y, width, height]}           PNG of the viewport, or of the clip
    {"mouse": [x, y]}                                                   move the mouse there (hover)

It prints one JSON object on stdout: {"values": {...}, "console": [...], "exceptions": [...], "screenshots": [...]},
where "console" holds console messages of level warning or error and browser log entries of level error, and
"exceptions" uncaught exceptions. Exit status: 0 when every action ran, 1 when one failed (a wait that timed out,
an evaluation that threw; the JSON then has "error"), 2 for bad usage. Only loopback URLs may be opened. Every step is
bounded; the browser is killed on exit.
"""
import asyncio
import base64
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse

from websockets.asyncio.client import connect

LOOPBACK = ("127.", "::1", "[::1]", "localhost")
STARTUP_SECONDS = 30
COMMAND_SECONDS = 30


class Failure(Exception):
    pass


def die_with_parent():
    """In the forked child before exec: SIGKILL when this script goes (a new session escapes the process-group
    kill of `timeout`; prctl(PR_SET_PDEATHSIG) does not), so a killed test run leaves no Chromium behind. Popen
    forks from the main thread, which lives as long as the script."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG


class Browser:
    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="wsload-cdp-")
        binary = shutil.which("chromium") or shutil.which("chromium-browser")
        if not binary:
            raise Failure("chromium is not installed (scripts/install-dependencies.sh --test installs it)")
        self.process = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
             "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
             "--user-data-dir=" + self.profile, "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=die_with_parent)
        self.socket = None
        self.next_id = 0
        self.pending = {}
        self.session = None
        self.console = []
        self.exceptions = []
        self.load_fired = None
        self.reader = None

    async def start(self):
        # Chromium writes its port and browser target path to DevToolsActivePort once it listens.
        marker = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + STARTUP_SECONDS
        while not os.path.exists(marker) or len(open(marker).read().splitlines()) < 2:
            if self.process.poll() is not None:
                raise Failure(f"chromium exited with {self.process.returncode} before it listened")
            if time.monotonic() > deadline:
                raise Failure(f"chromium did not listen within {STARTUP_SECONDS} s")
            await asyncio.sleep(0.1)
        port, path = open(marker).read().splitlines()[:2]
        self.socket = await connect(f"ws://127.0.0.1:{port}{path}", max_size=64 * 1024 * 1024, open_timeout=10)
        self.reader = asyncio.create_task(self.read())
        target = await self.call("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = await self.call("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, session=False)
        self.session = attached["sessionId"]
        for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
            await self.call(domain)

    async def read(self):
        async for raw in self.socket:
            message = json.loads(raw)
            if "id" in message:
                future = self.pending.pop(message["id"], None)
                if future and not future.done():
                    future.set_result(message)
                continue
            method, params = message.get("method"), message.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "warning", "assert"):
                text = " ".join(str(arg.get("value", arg.get("description", ""))) for arg in params.get("args", []))
                self.console.append({"level": params.get("type"), "text": text})
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                entry = params["entry"]
                self.console.append({"level": "error", "text": entry.get("text", ""), "url": entry.get("url", "")})
            elif method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                description = details.get("exception", {}).get("description") or details.get("text", "")
                self.exceptions.append(description)
            elif method == "Page.loadEventFired" and self.load_fired and not self.load_fired.done():
                self.load_fired.set_result(True)

    async def call(self, method, params=None, session=True):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        future = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = future
        await self.socket.send(json.dumps(message))
        try:
            reply = await asyncio.wait_for(future, COMMAND_SECONDS)
        except asyncio.TimeoutError:
            raise Failure(f"{method}: no answer within {COMMAND_SECONDS} s")
        if "error" in reply:
            raise Failure(f"{method}: {reply['error'].get('message')}")
        return reply.get("result", {})

    async def evaluate(self, expression):
        result = await self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise Failure(f"evaluating {expression!r}: {details.get('exception', {}).get('description') or details.get('text')}")
        return result.get("result", {}).get("value")

    def close(self):
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


async def run(actions):
    browser = Browser()
    output = {"values": {}, "console": browser.console, "exceptions": browser.exceptions, "screenshots": []}
    try:
        await browser.start()
        for action in actions:
            if "open" in action:
                url = action["open"]
                host = urllib.parse.urlsplit(url).hostname or ""
                if not url.startswith("file://") and not host.startswith(LOOPBACK) and host != "::1":
                    raise Failure(f"open: {url} is not a loopback or file URL")
                await browser.call("Emulation.setDeviceMetricsOverride", {
                    "width": int(action.get("width", 1280)), "height": int(action.get("height", 800)),
                    "deviceScaleFactor": 1, "mobile": False})
                browser.load_fired = asyncio.get_running_loop().create_future()
                await browser.call("Page.navigate", {"url": url})
                try:
                    await asyncio.wait_for(browser.load_fired, float(action.get("timeout", 20)))
                except asyncio.TimeoutError:
                    raise Failure(f"open: {url} did not load")
            elif "wait" in action:
                deadline = time.monotonic() + float(action.get("timeout", 10))
                while not await browser.evaluate(action["wait"]):
                    if time.monotonic() > deadline:
                        raise Failure(f"wait: {action['wait']!r} not true within {action.get('timeout', 10)} s")
                    await asyncio.sleep(0.1)
            elif "sleep" in action:
                await asyncio.sleep(min(float(action["sleep"]), 120))
            elif "eval" in action:
                output["values"][action.get("as", action["eval"])] = await browser.evaluate(action["eval"])
            elif "screenshot" in action:
                params = {"format": "png"}
                if "clip" in action:
                    x, y, width, height = action["clip"]
                    params["clip"] = {"x": x, "y": y, "width": width, "height": height, "scale": 1}
                shot = await browser.call("Page.captureScreenshot", params)
                with open(action["screenshot"], "wb") as file:
                    file.write(base64.b64decode(shot["data"]))
                output["screenshots"].append(action["screenshot"])
            elif "mouse" in action:
                x, y = action["mouse"]
                await browser.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
            else:
                raise Failure(f"unknown action {json.dumps(action)}")
        return output, 0
    except Failure as failure:
        output["error"] = str(failure)
        return output, 1
    except Exception as error:  # the browser or its socket went away: say what, with the output so far
        output["error"] = f"{type(error).__name__}: {error}"
        return output, 1
    finally:
        if browser.reader:
            browser.reader.cancel()
        if browser.socket:
            try:
                await asyncio.wait_for(browser.socket.close(), 5)
            except Exception:
                pass
        browser.close()


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        text = sys.stdin.read() if sys.argv[1] == "-" else open(sys.argv[1]).read()
        actions = json.loads(text)
        assert isinstance(actions, list)
    except (OSError, ValueError, AssertionError) as error:
        print(f"cdp_browser.py: the actions must be a JSON array ({error})", file=sys.stderr)
        return 2
    try:
        output, status = asyncio.run(asyncio.wait_for(run(actions), 300))
    except (asyncio.TimeoutError, Failure) as error:
        output, status = {"error": str(error) or "the actions did not finish within 300 s"}, 1
    except Exception as error:  # never leave the caller without a JSON answer
        output, status = {"error": f"{type(error).__name__}: {error}"}, 1
    print(json.dumps(output))
    return status


if __name__ == "__main__":
    sys.exit(main())
