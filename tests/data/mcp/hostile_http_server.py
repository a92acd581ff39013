"""An HTTP "MCP server" that misbehaves on purpose (claude-context's bounds tests for remote
servers). Standard library only. `hostile_http_server.py MODE PORT` on 127.0.0.1; every POST
gets, by MODE:

- unauthorized: 401 with `WWW-Authenticate: Bearer` (an OAuth server);
- huge-body: a JSON answer of 64 MB, sent as it is generated (a `Content-Length` first);
- huge-chunked: an endless JSON body without a length, chunked;
- endless-event: an SSE stream whose one event never ends (`data:` and 1 MB lines forever);
- silent: reads the request and never answers;
- flood-call: a good server (JSON answers) with two tools: `ok` answers "fine", `flood` answers
  with an endless chunked JSON body, `hang` never answers.

The `sse-` modes are servers of the older HTTP+SSE transport: a GET opens the event stream,
every POST is answered 202. By MODE, the stream:

- sse-foreign-endpoint URL: names URL (another origin) as its endpoint, then stays open;
- sse-huge-event: names /messages as its endpoint, then sends one event that never ends;
- sse-silent: sends comments (keep-alives), never an endpoint.

It writes the number of bytes it sent to stderr when the client goes away.
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

mode = sys.argv[1]
port = int(sys.argv[2])
CHUNK = b"x" * (1 << 20)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if mode.startswith("sse-"):
            return self.sse_stream()
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_DELETE(self):
        self.do_GET()

    def answer(self, status, obj):
        body = json.dumps(obj).encode() if obj is not None else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return True

    def flood_call(self, request):
        method = request.get("method")
        rid = request.get("id")
        if rid is None:
            return self.answer(202, None)
        if method == "initialize":
            return self.answer(200, {"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "flood", "version": "1"}}})
        if method == "tools/list":
            tools = [{"name": n, "description": n, "inputSchema": {"type": "object"}}
                     for n in ("ok", "flood", "hang")]
            return self.answer(200, {"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}})
        if method == "tools/call":
            name = request["params"]["name"]
            if name == "ok":
                return self.answer(200, {"jsonrpc": "2.0", "id": rid, "result": {
                    "content": [{"type": "text", "text": "fine"}]}})
            if name == "hang":
                time.sleep(3600)
            return None  # flood: the caller streams
        return self.answer(200, {"jsonrpc": "2.0", "id": rid, "result": {}})

    def sse_stream(self):
        sent = 0

        def chunk(data):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            if mode == "sse-foreign-endpoint":
                chunk(b"event: endpoint\ndata: " + sys.argv[3].encode() + b"\n\n")
                time.sleep(3600)
            elif mode == "sse-huge-event":
                chunk(b"event: endpoint\ndata: /messages?session_id=1\n\n")
                chunk(b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"x\":\"")
                while True:
                    line = b"data: " + CHUNK + b"\n"
                    chunk(line)
                    sent += len(line)
            else:
                while True:
                    chunk(b": keep-alive\n\n")
                    time.sleep(0.2)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            sys.stderr.write(f"{mode}: sent {sent} bytes\n")
            sys.stderr.flush()

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        if mode.startswith("sse-"):
            sys.stderr.write(f"{mode}: POST {self.path}\n")
            sys.stderr.flush()
            return self.answer(202, None)
        sent = 0
        try:
            if mode == "flood-call":
                if self.flood_call(json.loads(raw)) is None:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    while True:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(CHUNK), CHUNK))
                        sent += len(CHUNK)
                return
            if mode == "unauthorized":
                body = b'{"error":"invalid_token"}'
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Bearer realm="mcp", resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"')
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            elif mode == "huge-body":
                total = 64 << 20
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(total))
                self.end_headers()
                self.wfile.write(b'{"jsonrpc":"2.0","id":0,"result":{"x":"')
                while sent < total:
                    self.wfile.write(CHUNK)
                    sent += len(CHUNK)
            elif mode == "huge-chunked":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                first = b'{"jsonrpc":"2.0","id":0,"result":{"x":"'
                self.wfile.write(b"%x\r\n%s\r\n" % (len(first), first))
                while True:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(CHUNK), CHUNK))
                    sent += len(CHUNK)
            elif mode == "endless-event":
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                first = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"x\":\""
                self.wfile.write(b"%x\r\n%s\r\n" % (len(first), first))
                while True:
                    line = b"data: " + CHUNK + b"\n"
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                    sent += len(line)
            elif mode == "silent":
                time.sleep(3600)
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            sys.stderr.write(f"{mode}: sent {sent} bytes\n")
            sys.stderr.flush()


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
