"""A small MCP server on the official Python SDK (PyPI `mcp`, 2.x: MCPServer, formerly FastMCP).

claude-context's tests start it over stdio: tools with and without structured output, a slow
tool (cancellation), the server's environment (no key may reach it), a resource, instructions.

`--http PORT [--log FILE]`: the same server over streamable HTTP on 127.0.0.1:PORT at /mcp; the
headers of every request it receives are appended to FILE (one JSON object a line), and one
more tool, `headers`, answers with those of its own request.

`--sse PORT [--log FILE]`: the same, over the older HTTP+SSE transport (the SDK's
`SseServerTransport`): the event stream at /sse, messages posted to /messages/.
"""
import asyncio
import json
import os
import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer(
    "demo",
    instructions="DEMO-INSTRUCTIONS-MARKER: use add for sums.\nSecond line <b>bold</b> & more.",
)


@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Echo text back."""
    return text


@server.tool()
def env(name: str) -> str:
    """The value of a variable in the server's environment, or <unset>."""
    return os.environ.get(name, "<unset>")


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep, then say so."""
    await asyncio.sleep(seconds)
    return "slept"


@server.tool()
def fail(why: str) -> str:
    """Always fails."""
    raise ValueError(why)


def headers(ctx: Context) -> str:
    """The HTTP headers of this call's request (over HTTP only)."""
    request = ctx.request_context.request
    return json.dumps(dict(request.headers) if request is not None else {})


@server.resource("demo://greeting")
def greeting() -> str:
    """A greeting."""
    return "hello"


def serve_http(port, log, sse=False):
    import uvicorn

    server.tool()(headers)
    if sse:
        app = server.sse_app(host="127.0.0.1")
    else:
        app = server.streamable_http_app(host="127.0.0.1")

    async def recorded(scope, receive, send):
        if scope["type"] == "http" and log:
            with open(log, "a") as f:
                f.write(json.dumps({k.decode(): v.decode() for k, v in scope["headers"]}) + "\n")
        await app(scope, receive, send)

    uvicorn.run(recorded, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        log = sys.argv[sys.argv.index("--log") + 1] if "--log" in sys.argv else None
        serve_http(port, log)
    elif "--sse" in sys.argv:
        port = int(sys.argv[sys.argv.index("--sse") + 1])
        log = sys.argv[sys.argv.index("--log") + 1] if "--log" in sys.argv else None
        serve_http(port, log, sse=True)
    else:
        server.run()
