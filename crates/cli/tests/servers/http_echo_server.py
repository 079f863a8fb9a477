"""A minimal MCP server over streamable HTTP (JSON responses), for the command line's tests.

Serves the same tools as echo_server.py at http://127.0.0.1:PORT/mcp and prints PORT on its first line of
standard output. With a token argument, every request must carry `Authorization: Bearer <token>` (else 401).
Standard library only.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from echo_server import answer  # noqa: E402

TOKEN = sys.argv[1] if len(sys.argv) > 1 else None


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def authorised(self):
        if TOKEN is None or self.headers.get("Authorization") == "Bearer " + TOKEN:
            return True
        self.send_response(401)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"a bearer token is required")
        return False

    def do_GET(self):
        # No server-initiated stream.
        self.send_response(405)
        self.end_headers()

    def do_DELETE(self):
        self.send_response(200)
        self.end_headers()

    def do_POST(self):
        if not self.authorised():
            return
        length = int(self.headers.get("Content-Length", "0"))
        request = json.loads(self.rfile.read(length) or b"{}")
        if "id" not in request:
            self.send_response(202)
            self.end_headers()
            return
        try:
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": answer(request)}
        except LookupError as error:
            reply = {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": str(error)}}
        body = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
