#!/usr/bin/env python3
"""What the language server's own file watcher costs (issue 17): starts `claude-context lsp` on a
tree twice, once as a client that watches files (VS Code: the server registers a `**/*` watcher
and watches nothing itself) and once as one that cannot (Neovim 0.11 on Linux: the server watches
the tree with inotify), and prints for each: the time until the server is ready to follow the
disk, resident memory (VmRSS, VmHWM), threads, inotify watches, and how long an edit of the
root CLAUDE.md takes to reach `context/changed` (the edit is undone afterwards).

Usage: scripts/measure-watch.py BINARY TREE [ROUNDS]
  (TREE: e.g. /tmp/cc-bench/standard, made by ../shared/bench/make-monorepo)
"""
import json
import os
import subprocess
import sys
import threading
import time


def frame(msg):
    body = json.dumps(msg).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Client:
    def __init__(self, binary, env):
        self.p = subprocess.Popen([binary, "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=env)
        self.msgs = []
        self.cv = threading.Condition()
        threading.Thread(target=self.read, daemon=True).start()
        self.next = 1

    def read(self):
        out = self.p.stdout
        while True:
            n = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line == b"\r\n":
                    break
                if line.lower().startswith(b"content-length:"):
                    n = int(line.split(b":")[1])
            msg = json.loads(out.read(n))
            if "id" in msg and "method" in msg:
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            with self.cv:
                self.msgs.append((time.monotonic(), msg))
                self.cv.notify_all()

    def send(self, msg):
        self.p.stdin.write(frame(msg))
        self.p.stdin.flush()

    def request(self, method, params):
        i = self.next
        self.next += 1
        self.send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == i and "method" not in m)

    def wait(self, pred, timeout=60, since=0.0):
        end = time.monotonic() + timeout
        with self.cv:
            while True:
                for t, m in self.msgs:
                    if t >= since and pred(m):
                        return t, m
                left = end - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no matching message")
                self.cv.wait(left)


def status(pid):
    out = {}
    for line in open(f"/proc/{pid}/status"):
        k, _, v = line.partition(":")
        if k in ("VmRSS", "VmHWM", "Threads"):
            out[k] = v.strip()
    watches = 0
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            watches += sum(1 for l in open(f"/proc/{pid}/fdinfo/{fd}") if l.startswith("inotify wd:"))
        except OSError:
            pass
    out["inotify watches"] = watches
    return out


def run(binary, tree, home, client_watches):
    env = {"PATH": os.environ["PATH"], "HOME": home, "GIT_CONFIG_NOSYSTEM": "1",
           "CLAUDE_CONTEXT_MANAGED_DIR": os.path.join(home, "managed")}
    c = Client(binary, env)
    t0 = time.monotonic()
    uri = "file://" + tree
    caps = {"workspace": {"configuration": False, "didChangeWatchedFiles": {
        "dynamicRegistration": client_watches, "relativePatternSupport": True}}}
    c.request("initialize", {"processId": None, "rootUri": uri,
                             "workspaceFolders": [{"uri": uri, "name": "t"}], "capabilities": caps})
    c.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    if client_watches:
        t, _ = c.wait(lambda m: m.get("method") == "client/registerCapability")
    else:
        t, _ = c.wait(lambda m: m.get("method") == "window/logMessage"
                      and "watching" in m["params"]["message"])
    ready = t - t0
    # Let the first git snapshot and the scan finish.
    c.request("context/preview", {})
    time.sleep(3)
    st = status(c.p.pid)
    latency = None
    if not client_watches:
        path = os.path.join(tree, "CLAUDE.md")
        old = open(path).read()
        since = time.monotonic()
        open(path, "w").write(old + "\nMeasured.\n")
        t, _ = c.wait(lambda m: m.get("method") == "context/changed", since=since)
        latency = t - since
        open(path, "w").write(old)
        time.sleep(0.5)
    c.request("shutdown", None)
    c.send({"jsonrpc": "2.0", "method": "exit"})
    c.p.wait(10)
    return ready, st, latency


def main():
    binary, tree = sys.argv[1], os.path.realpath(sys.argv[2])
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    home = tree + "-home"
    if not os.path.isdir(home):
        home = tree
    for r in range(rounds):
        for watches in (True, False):
            ready, st, latency = run(binary, tree, home, watches)
            who = "client watches" if watches else "server watches"
            lat = f", CLAUDE.md edit -> context/changed {latency * 1000:.0f} ms" if latency else ""
            print(f"round {r + 1}, {who}: ready {ready * 1000:.0f} ms, {st}{lat}", flush=True)


main()
