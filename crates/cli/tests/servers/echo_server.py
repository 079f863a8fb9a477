"""A minimal MCP server over stdio (newline-delimited JSON-RPC), for the command-line runner's tests.

Tools: `echo` answers "echo: <text>"; `fail` answers an error result (isError). With ECHO_SERVER_GATE set to a
path, also `wait`, which answers once a file exists at that path (so a test holds a call running until it says
otherwise). Standard library only.
"""

import json
import os
import sys
import time

GATE = os.environ.get("ECHO_SERVER_GATE")

TOOLS = [
    {
        "name": "echo",
        "description": "Repeats the text it is given",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {
        "name": "fail",
        "description": "Always fails",
        "inputSchema": {"type": "object", "properties": {}},
    },
]
if GATE:
    TOOLS.append({"name": "wait", "description": "Answers once the gate opens", "inputSchema": {"type": "object"}})


def answer(request):
    method = request.get("method")
    params = request.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "echo", "version": "1.0.0"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        name = params.get("name")
        arguments = params.get("arguments") or {}
        if name == "echo":
            return {"content": [{"type": "text", "text": "echo: " + str(arguments.get("text", ""))}]}
        if name == "wait" and GATE:
            while not os.path.exists(GATE):
                time.sleep(0.02)
            return {"content": [{"type": "text", "text": "the gate opened"}]}
        if name == "fail":
            return {"content": [{"type": "text", "text": "this tool always fails"}], "isError": True}
        raise LookupError("no tool named " + str(name))
    raise LookupError("no method " + str(method))


def main():
    # A line on standard error, as real servers log: the runner shows it prefixed with the server's name.
    sys.stderr.write("echo server ready\n")
    sys.stderr.flush()
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        request = json.loads(line)
        if "id" not in request:
            continue  # a notification
        try:
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": answer(request)}
        except LookupError as error:
            reply = {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": str(error)}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
