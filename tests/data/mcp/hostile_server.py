"""An MCP server that misbehaves on purpose (claude-context's bounds tests). Raw JSON-RPC on
stdio, no SDK. The first argument picks the misbehaviour:

- silent: reads and never answers;
- garbage: prints garbage lines forever, never a valid answer;
- garbage-then-ok: garbage lines, then behaves (one tool);
- many-tools: 3,000 tools in one page;
- huge-descriptions: 12 tools of 1 MB descriptions each (one 12 MB message);
- endless-pages: a next cursor on every page;
- exit: exits at once (counts its starts in the file named by the second argument);
- stderr: writes to stderr, then exits;
- grandchild: starts `sleep 1000` (its pid in the file named by the second argument), then
  behaves;
- big-output: one tool answering with 300 KB of text;
- slow: sleeps the number of seconds of the second argument, then behaves (two tools, `ok` and
  `other`, and instructions).
"""
import json
import os
import subprocess
import sys
import time

mode = sys.argv[1]
arg = sys.argv[2] if len(sys.argv) > 2 else None


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def tool(name, desc="A tool."):
    return {"name": name, "description": desc, "inputSchema": {"type": "object", "properties": {}}}


if mode == "exit":
    with open(arg, "a") as f:
        f.write("start\n")
    sys.exit(1)
if mode == "stderr":
    sys.stderr.write("hostile server: failing on purpose\n")
    sys.stderr.flush()
    sys.exit(1)
if mode == "garbage":
    while True:
        sys.stdout.write("garbage {not json\n")
        sys.stdout.flush()
        time.sleep(0.001)
if mode == "grandchild":
    p = subprocess.Popen(["sleep", "1000"])
    with open(arg, "w") as f:
        f.write(str(p.pid))
if mode == "slow":
    time.sleep(float(arg))
if mode == "garbage-then-ok":
    for _ in range(100):
        sys.stdout.write("\x1b[31mWARNING: not json at all\n")
    sys.stdout.flush()

page = 0
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if mode == "silent" or "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        result = {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "0"},
        }
        if mode == "slow":
            result["instructions"] = "SLOW-INSTRUCTIONS-MARKER"
        send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
    elif method == "tools/list":
        if mode == "many-tools":
            tools = [tool("t%04d" % i) for i in range(3000)]
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": tools}})
        elif mode == "huge-descriptions":
            tools = [tool("big%02d" % i, "d" * (1 << 20)) for i in range(12)]
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": tools}})
        elif mode == "endless-pages":
            page += 1
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "tools": [tool("p%05d" % page)], "nextCursor": "c%d" % page}})
        elif mode == "slow":
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "tools": [tool("ok", "Says it is fine."), tool("other", "Another tool.")]}})
        else:
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": [tool("ok")]}})
    elif method == "tools/call":
        text = "x" * 300_000 if mode == "big-output" else "fine"
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {
            "content": [{"type": "text", "text": text}]}})
    else:
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
