#!/usr/bin/env python3
"""Drives the operator console in headless Chromium, as a person would, over the DevTools protocol on a pipe
(--remote-debugging-pipe: the standard library is all it needs).

It signs in with the token, opens the approvals inbox, approves the waiting call, watches the conversation go on
in the timeline, checks that a tool result holding markup shows as text, and saves screenshots. It prints one
JSON object with what it saw and exits 0; on any failure it exits 1 with the reason on stderr.

Usage: drive.py CHROMIUM URL TOKEN TOOL_USE_ID SCREENSHOT_DIR
"""

import base64
import json
import os
import subprocess
import sys
import tempfile
import time

PATIENCE = 30.0


class Browser:
    def __init__(self, chromium, profile):
        to_browser_read, to_browser_write = os.pipe()
        from_browser_read, from_browser_write = os.pipe()

        def wire_pipes():
            # The browser reads commands on fd 3 and writes answers on fd 4 (through spare numbers first, in case
            # a pipe already sits on 3 or 4).
            commands, answers = os.dup(to_browser_read), os.dup(from_browser_write)
            os.dup2(commands, 3)
            os.dup2(answers, 4)

        self.process = subprocess.Popen(
            [
                chromium,
                "--headless=new",
                "--remote-debugging-pipe",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--window-size=1280,900",
                "--user-data-dir=" + profile,
                "about:blank",
            ],
            # 3 and 4 stay open in the child: they are made in wire_pipes, before the other descriptors are closed.
            pass_fds=(3, 4, to_browser_read, from_browser_write),
            preexec_fn=wire_pipes,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self.writer = os.fdopen(to_browser_write, "wb", buffering=0)
        self.reader = os.fdopen(from_browser_read, "rb", buffering=0)
        self.buffer = b""
        self.next_id = 0
        self.session = None
        # Exceptions and console errors the page reported, for a failure's message.
        self.problems = []

    def close(self):
        try:
            self.call("Browser.close", session=False)
        except Exception:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def _message(self):
        while b"\0" not in self.buffer:
            chunk = self.reader.read(65536)
            if not chunk:
                raise RuntimeError("the browser closed its pipe")
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method, params=None, session=True):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        self.writer.write(json.dumps(message).encode() + b"\0")
        while True:
            answer = self._message()
            method_seen = answer.get("method")
            if method_seen == "Runtime.exceptionThrown":
                self.problems.append(str(answer["params"]["exceptionDetails"].get("exception", {}).get("description")))
            elif method_seen == "Runtime.consoleAPICalled" and answer["params"].get("type") == "error":
                self.problems.append(" ".join(str(arg.get("value")) for arg in answer["params"].get("args", [])))
            elif method_seen == "Log.entryAdded":
                self.problems.append(answer["params"]["entry"].get("text", ""))
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})

    def open(self, url):
        target = self.call("Target.createTarget", {"url": url}, session=False)["targetId"]
        attached = self.call("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)
        self.session = attached["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Log.enable")

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression, what):
        """Waits until `expression` is truthy in the page (the page changes as the server's events arrive)."""
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(expression)
            except RuntimeError:
                value = None  # the page is navigating
            if value:
                return value
            time.sleep(0.05)
        raise RuntimeError(f"timed out waiting for {what}")

    def click(self, selector):
        found = self.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return false; e.click(); return true; }})()")
        if not found:
            raise RuntimeError(f"nothing to click at {selector}")

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"]
        with open(path, "wb") as file:
            file.write(base64.b64decode(data))


def main():
    chromium, url, token, tool_use_id, shots = sys.argv[1:6]
    os.makedirs(shots, exist_ok=True)
    seen = {}
    with tempfile.TemporaryDirectory() as profile:
        browser = Browser(chromium, profile)
        try:
            browser.open(url + "/")
            # Not signed in: the console sends the browser to its sign-in form.
            browser.wait_for("document.readyState === 'complete' && !!document.getElementById('token')", "the sign-in form")
            seen["redirected_to"] = browser.evaluate("location.pathname")
            browser.click("#token")
            browser.evaluate("document.getElementById('token').focus()")
            browser.call("Input.insertText", {"text": token})
            browser.click("#sign-in")
            browser.wait_for("document.body && document.body.dataset.ready === 'true'", "the console to load")
            browser.screenshot(os.path.join(shots, "1-conversations.png"))

            # The approvals inbox, with the waiting call.
            browser.click("#tab-approvals")
            waiting = f"#approval-list li.approval[data-tool-use-id={json.dumps(tool_use_id)}]"
            browser.wait_for(f"!!document.querySelector({json.dumps(waiting)})", "the waiting call in the inbox")
            seen["inbox_input"] = browser.evaluate(f"document.querySelector({json.dumps(waiting + ' pre.json')}).textContent")
            browser.screenshot(os.path.join(shots, "2-approvals.png"))
            browser.click(waiting + " button.approve")

            # The conversation goes on in its timeline: the result, then the model's reply.
            browser.wait_for("!!document.querySelector('#timeline li.entry-reply')", "the reply in the timeline")
            browser.wait_for(
                "(document.querySelector('#timeline-status') || {}).textContent.includes('idle')", "the idle status"
            )
            seen["kinds"] = browser.evaluate("[...document.querySelectorAll('#timeline li.entry')].map(e => e.dataset.kind)")
            seen["result_text"] = browser.evaluate(
                "document.querySelector('#timeline li.entry-tool_result .text').textContent"
            )
            seen["reply_text"] = browser.evaluate("document.querySelector('#timeline li.entry-reply .text').textContent")
            # Markup in a result or an input is text: no element was made from it, no script ran.
            seen["markup_elements"] = browser.evaluate(
                "document.querySelectorAll('#timeline script, #timeline b, #timeline i, #approval-list i').length"
            )
            seen["script_ran"] = browser.evaluate("window.injected === true")
            seen["status"] = browser.evaluate("document.querySelector('#timeline-status').textContent")
            browser.screenshot(os.path.join(shots, "3-timeline.png"))
        except Exception as error:
            # What the page looked like when it went wrong: a screenshot and its address and text.
            try:
                browser.screenshot(os.path.join(shots, "failure.png"))
                where = browser.evaluate("location.href + ' :: ' + (document.body ? document.body.innerText.slice(0, 600) : '')")
                problems = "; ".join(browser.problems[-5:])
                raise RuntimeError(f"{error} (at {where}; page errors: {problems or 'none'})") from error
            except RuntimeError:
                raise
        finally:
            browser.close()
    print(json.dumps(seen))


if __name__ == "__main__":
    try:
        main()
    except Exception as error:  # the reason, for the Rust test that runs this
        print(f"drive.py: {error}", file=sys.stderr)
        sys.exit(1)
