#!/usr/bin/env python3
"""Hostile trees at scale (issue 8): build them, and measure claude-context on them.

Each case is a tree that once made the tool hang, go quadratic or eat gigabytes. This script
builds the same trees every time (deterministic), so the figures before and after a fix compare.
The `tests/e2e/hostile/` suite builds small and medium versions of the same trees in Rust and asserts
bounds; this script is for the full-size figures in the issue's note.

Usage:
  hostile-trees.py make CASE N DEST
      Build case CASE at size N under DEST (must not exist); print one JSON line: root, cwd,
      home, managed and the command line (after the binary) to run.
  hostile-trees.py measure [--bin NAME=PATH]... [--runs K] [--timeout S] CASE:N [CASE:N ...]
      Build each tree in a temp dir, then run every binary on it K times, alternating binaries run
      by run so they share the machine's noise; print a markdown table of the median wall time
      and the largest peak RSS (GNU time's %M, `/usr/bin/time` from Debian's `time` package).
      A run that exceeds the timeout is killed and shown as `>S s`.
  hostile-trees.py cases
      List the cases.

Cases (N is the size):
  rules N          N unconditional rules in .claude/rules; `check`
  rules-preview N  the same tree; `preview --json`
  depth N          cwd N directories below a project with a CLAUDE.md and a rule; `preview --json`
  includes N       a CLAUDE.md with N distinct missing @includes; `preview --json`
  includes-check N the same tree; `check`
  cond-rules N     N conditional rules (`paths: src/dN/**/*.ts`); `preview --json`
  glob-bytes N     one rule whose single glob is N bytes long; `preview --json`
  rule-paths N     one rule with N globs in `paths`; `preview --json`
  rule-paths-check N  the same tree; `check`
  lsp-includes N   the language server: open a CLAUDE.md with N missing @includes, then time a
                   hover, a `context/preview` and `textDocument/documentLink` (sequentially)

Environment of every run: HOME and CLAUDE_CONTEXT_MANAGED_DIR inside the tree, no git (the tree is
not a repository and GIT_CEILING_DIRECTORIES stops the search at the temp dir).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def base_tree(dest):
    root = os.path.join(dest, "p")
    home = os.path.join(dest, "home")
    managed = os.path.join(dest, "managed")
    for d in (root, home, managed):
        os.makedirs(d)
    return root, home, managed


def make_rules(root, n):
    write(os.path.join(root, "CLAUDE.md"), "# Project\n")
    rules = os.path.join(root, ".claude", "rules")
    os.makedirs(rules)
    for i in range(n):
        with open(os.path.join(rules, f"r{i:06}.md"), "w") as f:
            f.write(f"Rule {i}: keep functions short.\n")
    return root


def make_depth(root, n):
    write(os.path.join(root, "CLAUDE.md"), "# Project\n")
    write(os.path.join(root, ".claude", "rules", "style.md"), "Rule: tabs.\n")
    # Built one level at a time with relative paths: the full path nears PATH_MAX at 2,000 levels.
    cwd = os.getcwd()
    os.chdir(root)
    try:
        for _ in range(n):
            os.mkdir("d")
            os.chdir("d")
    finally:
        os.chdir(cwd)
    return os.path.join(root, *(["d"] * n))


def make_includes(root, n):
    lines = ["# Project"] + [f"@missing/m{i}.md" for i in range(n)]
    write(os.path.join(root, "CLAUDE.md"), "\n".join(lines) + "\n")
    return root


def make_cond_rules(root, n):
    write(os.path.join(root, "CLAUDE.md"), "# Project\n")
    rules = os.path.join(root, ".claude", "rules")
    os.makedirs(rules)
    for i in range(n):
        with open(os.path.join(rules, f"c{i:06}.md"), "w") as f:
            f.write(f"---\npaths: src/d{i}/**/*.ts\n---\nConditional rule {i}.\n")
    write(os.path.join(root, "src", "d0", "a.ts"), "export {};\n")
    return root


def make_glob_bytes(root, n):
    write(os.path.join(root, "CLAUDE.md"), "# Project\n")
    # A literal directory name with a `*` every 64 characters: what a generated glob looks like.
    chunk = "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0*"
    body = (chunk * (n // len(chunk) + 1))[: max(n - 8, 1)]
    write(
        os.path.join(root, ".claude", "rules", "huge-glob.md"),
        f'---\npaths: "src/{body}.ts"\n---\nOne huge glob.\n',
    )
    write(os.path.join(root, "src", "a.ts"), "export {};\n")
    return root


def make_rule_paths(root, n):
    write(os.path.join(root, "CLAUDE.md"), "# Project\n")
    globs = "".join(f"  - src/dir{i}/**/*.ts\n" for i in range(n))
    write(
        os.path.join(root, ".claude", "rules", "many-paths.md"),
        f"---\npaths:\n{globs}---\nA rule with many globs.\n",
    )
    write(os.path.join(root, "src", "dir0", "a.ts"), "export {};\n")
    return root


def preview(cwd):
    return ["preview", "--json", "--no-git", "--cwd", cwd]


def check(cwd):
    return ["check", "--cwd", cwd]


# name -> (builder, command for the cwd it returns)
CASES = {
    "rules": (make_rules, check),
    "rules-preview": (make_rules, preview),
    "depth": (make_depth, preview),
    "includes": (make_includes, preview),
    "includes-check": (make_includes, check),
    "cond-rules": (make_cond_rules, preview),
    "glob-bytes": (make_glob_bytes, preview),
    "rule-paths": (make_rule_paths, preview),
    "rule-paths-check": (make_rule_paths, check),
    "lsp-includes": (make_includes, None),
}


def make(case, n, dest):
    builder, command = CASES[case]
    root, home, managed = base_tree(dest)
    cwd = builder(root, n)
    return {
        "root": root,
        "cwd": cwd,
        "home": home,
        "managed": managed,
        "args": command(cwd) if command else None,
    }


def env_for(tree, dest):
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": tree["home"],
        "CLAUDE_CONTEXT_MANAGED_DIR": tree["managed"],
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CEILING_DIRECTORIES": os.path.dirname(dest),
    }


def run_timed(binary, tree, dest, timeout):
    """(seconds, peak RSS in KB, exit code) of one CLI run under GNU time; seconds None on timeout."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        argv = ["/usr/bin/time", "-f", "%e %M", "-o", tf.name, binary] + tree["args"]
        start = time.monotonic()
        # Its own process group, so a timeout kills GNU time *and* the binary it runs.
        p = subprocess.Popen(
            argv,
            env=env_for(tree, dest),
            cwd=tree["root"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            p.wait()
            return None, None, None
        wall = time.monotonic() - start
        fields = tf.read().split()
        rss = int(fields[-1]) if fields else None
        return wall, rss, p.returncode


class Lsp:
    """A minimal LSP client over stdio, enough to time requests."""

    def __init__(self, binary, env, cwd):
        self.p = subprocess.Popen(
            [binary, "lsp", "--stdio"],
            env=env,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.next_id = 1

    def send(self, msg):
        body = json.dumps(msg).encode()
        self.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.p.stdin.flush()

    def read(self):
        length = None
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise EOFError("server closed stdout")
            line = line.strip()
            if not line:
                break
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        return json.loads(self.p.stdout.read(length))

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def call(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            m = self.read()
            if m.get("id") == rid and "method" not in m:
                return m
            if "method" in m and "id" in m:
                # A server request (workspace/configuration, registrations): answer with nothing.
                self.send({"jsonrpc": "2.0", "id": m["id"], "result": None})

    def peak_rss_kb(self):
        with open(f"/proc/{self.p.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return None

    def close(self):
        try:
            self.call("shutdown", None)
            self.notify("exit", None)
            self.p.wait(timeout=10)
        except Exception:
            self.p.kill()
            self.p.wait()


def uri(path):
    from urllib.parse import quote

    return "file://" + quote(path)


def run_lsp(binary, tree, dest, timeout):
    """Times (hover, preview, documentLink) after opening the big CLAUDE.md; returns
    (total seconds, peak RSS KB, detail)."""
    import threading

    lsp = Lsp(binary, env_for(tree, dest), tree["root"])
    timer = threading.Timer(timeout, lsp.p.kill)
    timer.start()
    detail = {}
    try:
        folder = uri(tree["root"])
        lsp.call(
            "initialize",
            {
                "processId": None,
                "rootUri": folder,
                "workspaceFolders": [{"uri": folder, "name": "ws"}],
                "capabilities": {"textDocument": {"hover": {"contentFormat": ["markdown"]}}},
            },
        )
        lsp.notify("initialized", {})
        path = os.path.join(tree["root"], "CLAUDE.md")
        with open(path) as f:
            text = f.read()
        doc = {"uri": uri(path)}
        start = time.monotonic()
        lsp.notify(
            "textDocument/didOpen",
            {"textDocument": {**doc, "languageId": "markdown", "version": 1, "text": text}},
        )
        t = time.monotonic()
        lsp.call("textDocument/hover", {"textDocument": doc, "position": {"line": 1, "character": 2}})
        detail["hover"] = time.monotonic() - t
        t = time.monotonic()
        lsp.call("context/preview", {"textDocument": doc})
        detail["preview"] = time.monotonic() - t
        t = time.monotonic()
        lsp.call("textDocument/documentLink", {"textDocument": doc})
        detail["documentLink"] = time.monotonic() - t
        total = time.monotonic() - start
        rss = lsp.peak_rss_kb()
        lsp.close()
        return total, rss, detail
    except (EOFError, BrokenPipeError, ValueError):
        # Killed by the timer: what was answered before still tells where the time went.
        return None, None, detail
    finally:
        timer.cancel()
        if lsp.p.poll() is None:
            lsp.p.kill()
            lsp.p.wait()


def fmt_s(s, timeout):
    return f">{timeout:g} s" if s is None else f"{s:.2f} s"


def fmt_mb(kb):
    return "?" if kb is None else f"{kb / 1024:.0f} MB"


def measure(argv):
    bins, runs, timeout, specs = [], 3, 300.0, []
    it = iter(argv)
    for a in it:
        if a == "--bin":
            name, _, path = next(it).partition("=")
            bins.append((name, os.path.abspath(path)))
        elif a == "--runs":
            runs = int(next(it))
        elif a == "--timeout":
            timeout = float(next(it))
        else:
            specs.append(a)
    if not bins:
        sys.exit("measure: at least one --bin NAME=PATH")
    print(f"runs per binary: {runs}; timeout {timeout:g} s; load average {os.getloadavg()[0]:.2f}")
    header = "| case | N | " + " | ".join(f"{n} time | {n} peak RSS" for n, _ in bins) + " |"
    print(header)
    print("|" + "---|" * (2 + 2 * len(bins)))
    for spec in specs:
        case, _, n = spec.partition(":")
        n = int(n)
        tmp = tempfile.mkdtemp(prefix=f"hostile-{case}-")
        try:
            dest = os.path.join(tmp, "t")
            tree = make(case, n, dest)
            times = {name: [] for name, _ in bins}
            rss = {name: [] for name, _ in bins}
            details = {name: [] for name, _ in bins}
            timed_out = {name: False for name, _ in bins}
            for r in range(runs):
                order = bins if r % 2 == 0 else list(reversed(bins))
                for name, path in order:
                    if timed_out[name]:
                        continue
                    if case == "lsp-includes":
                        s, kb, d = run_lsp(path, tree, dest, timeout)
                        if d:
                            details[name].append(d)
                            print(f"  ({name} run {r + 1}: " + ", ".join(f"{k} {v:.2f} s" for k, v in d.items()) + ")", flush=True)
                    else:
                        s, kb, _ = run_timed(path, tree, dest, timeout)
                    if s is None:
                        timed_out[name] = True
                    else:
                        times[name].append(s)
                        rss[name].append(kb or 0)
            cells = []
            for name, _ in bins:
                if timed_out[name] and not times[name]:
                    cells += [fmt_s(None, timeout), "?"]
                else:
                    cells += [fmt_s(statistics.median(times[name]), timeout), fmt_mb(max(rss[name]))]
            print(f"| {case} | {n:,} | " + " | ".join(cells) + " |", flush=True)
            for name, ds in details.items():
                if ds:
                    med = {k: statistics.median(d[k] for d in ds) for k in ds[0]}
                    print(
                        f"|   {name}: " + ", ".join(f"{k} {v:.2f} s" for k, v in med.items()) + " | | |",
                        flush=True,
                    )
        finally:
            # `rm`, not shutil.rmtree: Python recurses once per level and a 2,000-deep tree
            # exceeds its recursion limit.
            subprocess.run(["rm", "-rf", tmp], check=False)


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return
    cmd = sys.argv[1]
    if cmd == "cases":
        for name in CASES:
            print(name)
    elif cmd == "make":
        case, n, dest = sys.argv[2], int(sys.argv[3]), sys.argv[4]
        if os.path.exists(dest):
            sys.exit(f"make: {dest} exists")
        print(json.dumps(make(case, n, dest)))
    elif cmd == "measure":
        measure(sys.argv[2:])
    else:
        sys.exit(f"unknown command {cmd!r}; see --help")


if __name__ == "__main__":
    main()
