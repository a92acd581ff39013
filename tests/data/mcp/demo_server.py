"""A small MCP server on the official Python SDK (PyPI `mcp`, 2.x: MCPServer, formerly FastMCP).

claude-context's tests start it over stdio: tools with and without structured output, a slow
tool (cancellation), the server's environment (no key may reach it), a resource, instructions.
"""
import asyncio
import os

from mcp.server.mcpserver import MCPServer

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


@server.resource("demo://greeting")
def greeting() -> str:
    """A greeting."""
    return "hello"


if __name__ == "__main__":
    server.run()
