#!/usr/bin/env bash
# P1 (../shared/spec/quality.md): `claude-context preview --json --cwd ROOT --file <deep file>`, whole
# process, cold, must take ≤ 1.2 × `git status --short` on the same tree and ≤ 20 MB peak memory.
#
# Usage: scripts/bench-p1.sh [--large] [--runs N] [--tree ROOT --home HOME] [--file REL]
#                             [--no-build] [--bin PATH]
#
#   (default)  the standard tree: /tmp/cc-bench/standard (home /tmp/cc-bench/standard-home), or an
#              existing /tmp/cc-bench/standard/repo (home /tmp/cc-bench/standard/home); made with
#              ../shared/bench/make-monorepo when neither exists.
#   --large    /tmp/cc-bench/large (home /tmp/cc-bench/large-home), made with
#              --files 100000 --dirs 6000 --rules 1000 when missing.
#   --runs N   timed runs of each command (default 30), after 3 untimed warm-up runs of each.
#   --file REL the file to open, relative to ROOT (default: the deepest non-.md sample path that
#              make-monorepo printed, saved next to the tree as <tree>.json).
#   --bin PATH another claude-context binary (implies --no-build), e.g. to compare two builds.
#
# The two commands alternate run by run (git then ours, then ours then git, ...) so they share the
# machine's noise. "Cold" means a fresh process per run; the OS page cache stays warm, for git and for us
# alike. Timing is wall clock around spawn+wait of each process. Peak memory is measured in 5
# separate runs of each under GNU time (`/usr/bin/time -f %M`, Debian package `time`): the
# ru_maxrss that Python's wait4 reports would include Python's own RSS (the child is vforked from
# it). Our process runs with HOME set to the tree's home, so ~/.claude/CLAUDE.md, user rules and
# the 320-line MEMORY.md are real.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ws="$(cd "$here/.." && pwd)"
gen="$ws/../shared/bench/make-monorepo"
bench_dir="${CC_BENCH_DIR:-/tmp/cc-bench}"

runs=30
large=0
tree=""
home=""
file=""
build=1
bin=""
while [ $# -gt 0 ]; do
    case "$1" in
        --large) large=1 ;;
        --runs) runs="$2"; shift ;;
        --tree) tree="$2"; shift ;;
        --home) home="$2"; shift ;;
        --file) file="$2"; shift ;;
        --no-build) build=0 ;;
        --bin) bin="$2"; build=0; shift ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        *) echo "bench-p1: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done

bin="${bin:-$ws/target/release/claude-context}"
if [ "$build" = 1 ]; then
    # A no-op when the binary is current.
    (cd "$ws" && cargo build --release --quiet --bin claude-context)
fi
[ -x "$bin" ] || { echo "bench-p1: $bin missing (run without --no-build)" >&2; exit 1; }

# Where the tree is, and its sample list.
if [ -z "$tree" ]; then
    if [ "$large" = 1 ]; then
        tree="$bench_dir/large"; home="${home:-$bench_dir/large-home}"
        gen_args=(--files 100000 --dirs 6000 --rules 1000)
        json="$bench_dir/large.json"
    elif [ ! -d "$bench_dir/standard/.git" ] && [ -d "$bench_dir/standard/repo/.git" ]; then
        tree="$bench_dir/standard/repo"; home="${home:-$bench_dir/standard/home}"
        gen_args=()
        json="$bench_dir/standard.json"
    else
        tree="$bench_dir/standard"; home="${home:-$bench_dir/standard-home}"
        gen_args=()
        json="$bench_dir/standard.json"
    fi
else
    gen_args=()
    json="${tree%/}.json"
fi
if [ -z "$home" ]; then
    echo "bench-p1: --tree needs --home" >&2
    exit 2
fi

# Someone else may be making the tree right now: wait for their generator to finish.
waited=0
while pgrep -f -- "make-monorepo $tree" >/dev/null 2>&1; do
    [ "$waited" = 0 ] && echo "bench-p1: waiting for make-monorepo to finish $tree" >&2
    waited=$((waited + 5))
    [ "$waited" -ge 1200 ] && { echo "bench-p1: gave up waiting for $tree" >&2; exit 1; }
    sleep 5
done
if [ ! -d "$tree/.git" ]; then
    if [ -e "$tree" ] && [ -n "$(ls -A "$tree" 2>/dev/null)" ]; then
        echo "bench-p1: $tree exists but has no .git (being made by someone else?); wait and retry" >&2
        exit 1
    fi
    echo "bench-p1: making $tree (home $home) ${gen_args[*]:-}" >&2
    mkdir -p "$(dirname "$tree")"
    python3 "$gen" "$tree" --home "$home" "${gen_args[@]}" > "$json"
fi

if [ -z "$file" ]; then
    if [ -f "$json" ]; then
        # Deepest sample that is source code (a .md sample is less likely to match rules).
        file="$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["samples"]
code = [p for p in s if not p.endswith(".md")] or s
print(max(code, key=lambda p: p.count("/")))' "$json")"
    else
        # No sample list: the deepest tracked .ts/.rs/.py/.go file.
        file="$(git -C "$tree" ls-files -- '*.ts' '*.rs' '*.py' '*.go' \
            | awk -F/ '{ print NF "\t" $0 }' | sort -k1,1nr -k2 | head -n 1 | cut -f2)"
    fi
fi
[ -f "$tree/$file" ] || { echo "bench-p1: $tree/$file is not a file" >&2; exit 1; }
if [ ! -x /usr/bin/time ]; then
    echo "bench-p1: /usr/bin/time missing; installing Debian's time package" >&2
    apt-get install -y -qq time >/dev/null || { echo "bench-p1: apt-get install time failed" >&2; exit 1; }
fi

python3 - "$bin" "$tree" "$home" "$file" "$runs" <<'PY'
import json, os, statistics, subprocess, sys, tempfile, time

bin_, tree, home, rel, runs = sys.argv[1:6]
runs = int(runs)
deep = os.path.join(tree, rel)
ours_env = dict(os.environ, HOME=home)
cmds = {
    "git status --short": (["git", "-C", tree, "status", "--short"], dict(os.environ)),
    "claude-context preview": ([bin_, "preview", "--json", "--cwd", tree, "--file", deep], ours_env),
}

def run(argv, env):
    t0 = time.perf_counter()
    code = subprocess.call(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    dt = time.perf_counter() - t0
    if code != 0:
        sys.exit(f"bench-p1: {argv[0]} exited {code}")
    return dt * 1000.0  # ms

def peak_rss(argv, env):
    with tempfile.NamedTemporaryFile("r") as f:
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", f.name, *argv], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return int(f.read().split()[-1])  # KiB

# Sanity: our output is a real preview (instructions, git block, attachments for the deep file).
out = subprocess.run(cmds["claude-context preview"][0], env=ours_env, capture_output=True, check=True)
pv = json.loads(out.stdout)
kinds = [b["kind"] for b in pv["blocks"]]
print(f"tree   {tree}  (HOME={home})")
print(f"file   {rel}")
print(f"output {len(pv['files'])} files, {len(pv['attachments'])} attachments, blocks {kinds}, "
      f"{pv['totals']['tokens']} tokens, git changed {pv.get('git', {}).get('changed')}")
if "gitStatus" not in kinds:
    sys.exit("bench-p1: no git block in the preview")

for _ in range(3):  # warm-up: page cache, binary mapped
    for argv, env in cmds.values():
        run(argv, env)

times = {k: [] for k in cmds}
for i in range(runs):
    order = list(cmds.items()) if i % 2 == 0 else list(reversed(cmds.items()))
    for name, (argv, env) in order:
        times[name].append(run(argv, env))
rss = {k: [peak_rss(*cmds[k]) for _ in range(5)] for k in cmds}

def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]

print(f"\n{runs} interleaved runs each (fresh process per run, page cache warm), ms:")
print(f"  {'command':<24} {'median':>8} {'p90':>8} {'min':>8} {'max':>8} {'peak RSS MiB (max of 5)':>24}")
for name in cmds:
    t = times[name]
    print(f"  {name:<24} {statistics.median(t):8.1f} {pct(t, 0.9):8.1f} {min(t):8.1f} {max(t):8.1f}"
          f" {max(rss[name]) / 1024:24.1f}")
g, o = times["git status --short"], times["claude-context preview"]
ratio = statistics.median(o) / statistics.median(g)
paired = statistics.median([b / a for a, b in zip(g, o)])
peak = max(rss["claude-context preview"]) / 1024
print(f"\nratio of medians  {ratio:.2f}   (median of per-pair ratios {paired:.2f})   target ≤ 1.20  "
      f"{'PASS' if ratio <= 1.2 else 'MISS'}")
print(f"peak RSS (ours)   {peak:.1f} MB (median {statistics.median(rss['claude-context preview']) / 1024:.1f})"
      f"   target ≤ 20 MB  {'PASS' if peak <= 20 else 'MISS'}")
PY
