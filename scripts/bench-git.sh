#!/usr/bin/env bash
# P6 (../shared/spec/quality.md): the git snapshot must be no slower than `git status --short` plus
# `git log -n 5` through the git CLI on the same tree.
#
# Usage: scripts/bench-git.sh [--large] [--runs N] [--tree DIR] [--no-build] [--hyperfine]
#
#   (default)   the standard tree: $CC_BENCH_TREE, else /tmp/cc-bench/standard/repo, else
#               /tmp/cc-bench/standard; made with ../shared/bench/make-monorepo when missing.
#   --large     /tmp/cc-bench/large (made with --files 100000 --dirs 6000 --rules 1000 when missing).
#   --runs N    timed runs of each command (default 40), after 3 untimed warm-up runs of each.
#   --hyperfine also run hyperfine (when installed) on the same commands, for its statistics.
#
# Four commands, each a fresh process per run, alternating run by run so they share the machine's
# noise: (1) `git status --short` then `git log -n 5 --oneline` (the P6 baseline), (2) `git status
# --short` alone (the P1 floor), (3) our `git_snapshot` example, which takes the snapshot once and
# renders the block (output discarded), (4) the same with the git CLI engine forced (what a
# repository the native engine declines costs). Timing uses bash's $EPOCHREALTIME (no extra process).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ws="$(cd "$here/.." && pwd)"
gen="$ws/../shared/bench/make-monorepo"
bench_dir="${CC_BENCH_DIR:-/tmp/cc-bench}"

runs=40
large=0
tree="${CC_BENCH_TREE:-}"
build=1
hf=0
while [ $# -gt 0 ]; do
    case "$1" in
        --large) large=1 ;;
        --runs) runs="$2"; shift ;;
        --tree) tree="$2"; shift ;;
        --no-build) build=0 ;;
        --hyperfine) hf=1 ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        *) echo "bench-git: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done

if [ "$large" = 1 ]; then
    tree="$bench_dir/large"
    if [ ! -d "$tree/.git" ]; then
        echo "bench-git: making the large tree in $tree (a few minutes)" >&2
        python3 "$gen" "$tree" --home "$bench_dir/large-home" --files 100000 --dirs 6000 --rules 1000 >"$bench_dir/large.json"
    fi
elif [ -z "$tree" ]; then
    if [ -d "$bench_dir/standard/repo/.git" ]; then
        tree="$bench_dir/standard/repo"
    elif [ -d "$bench_dir/standard/.git" ]; then
        tree="$bench_dir/standard"
    else
        tree="$bench_dir/standard/repo"
        echo "bench-git: making the standard tree in $tree" >&2
        mkdir -p "$bench_dir/standard"
        python3 "$gen" "$tree" --home "$bench_dir/standard/home" >"$bench_dir/standard/repo.json"
    fi
fi
[ -d "$tree/.git" ] || { echo "bench-git: $tree is not a git work tree" >&2; exit 1; }

bin="$ws/target/release/examples/git_snapshot"
if [ "$build" = 1 ]; then
    (cd "$ws" && cargo build --release --quiet --example git_snapshot)
fi
[ -x "$bin" ] || { echo "bench-git: $bin missing (run without --no-build)" >&2; exit 1; }

cd "$tree"
# Let git refresh the index once, as a user's shell would have, so neither side re-hashes racy files.
git status --short >/dev/null

now_us() { local t="$EPOCHREALTIME"; echo "${t/./}"; }
run_pair() { git status --short >/dev/null; git log -n 5 --oneline >/dev/null; }
run_status() { git status --short >/dev/null; }
run_ours() { "$bin" "$tree" --quiet; }
run_cli() { "$bin" "$tree" --quiet --engine cli; }

for _ in 1 2 3; do run_pair; run_status; run_ours; run_cli; done
pair=() status=() ours=() cli=()
for _ in $(seq "$runs"); do
    t0=$(now_us); run_pair; t1=$(now_us); run_status; t2=$(now_us); run_ours; t3=$(now_us); run_cli; t4=$(now_us)
    pair+=($((t1 - t0))); status+=($((t2 - t1))); ours+=($((t3 - t2))); cli+=($((t4 - t3)))
done

python3 - "$tree" "$runs" "${pair[*]}" "${status[*]}" "${ours[*]}" "${cli[*]}" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import statistics, sys
tree, runs, pair, status, ours, cli, cores, load = sys.argv[1:]
def stats(s):
    v = sorted(int(x) / 1000 for x in s.split())
    q = statistics.quantiles(v, n=4)
    return statistics.median(v), q[0], q[2], v[0]
rows = [("git status --short + git log -n 5", stats(pair)), ("git status --short", stats(status)), ("git_snapshot (ours)", stats(ours)), ("git_snapshot --engine cli", stats(cli))]
print(f"tree {tree}, {runs} alternating runs each, {cores} cores, load average {load}")
print(f"{'command':<36} {'median':>9} {'p25':>9} {'p75':>9} {'min':>9}  (ms)")
for name, (m, p25, p75, mn) in rows:
    print(f"{name:<36} {m:9.1f} {p25:9.1f} {p75:9.1f} {mn:9.1f}")
m_pair, m_status, m_ours = rows[0][1][0], rows[1][1][0], rows[2][1][0]
print(f"ours / (status + log) = {m_ours / m_pair:.2f}   ours / status = {m_ours / m_status:.2f}   (medians)")
PY

if [ "$hf" = 1 ] && command -v hyperfine >/dev/null; then
    hyperfine -N --warmup 3 --runs "$runs" \
        -n 'git status --short' 'git status --short' \
        -n 'git log -n 5 --oneline' 'git log -n 5 --oneline' \
        -n 'git_snapshot (ours)' "$bin $tree --quiet"
fi
