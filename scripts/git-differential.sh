#!/usr/bin/env bash
# The full differential test of the git status block against the git CLI (issue 7): seeded random repository
# states, each compared byte for byte with `git --no-optional-locks status --short --ignore-submodules=dirty`,
# through the snapshot and through the StatusCache fed by a simulated file watcher.
#
# Usage: scripts/git-differential.sh [STATES] [--seed N]
#
#   STATES    how many states (default 1200: 100 seeds of 12 steps); `cargo test` runs 72.
#   --seed N  replay one seed (what a mismatch report names).
#
# Prints the number of states, mismatches, which engine answered how often and why the native engine declined;
# exits non-zero on any mismatch. Release build (the test binary drives git, which dominates the time).
set -euo pipefail
cd "$(dirname "$0")/.."

states=1200
seed=""
while [ $# -gt 0 ]; do
    case "$1" in
        --seed) seed="$2"; shift ;;
        -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
        *) states="$1" ;;
    esac
    shift
done
export GIT_DIFF_STATES="$states"
if [ -n "$seed" ]; then export GIT_DIFF_SEED="$seed"; fi
cargo test --release --test e2e git_differential:: -- --nocapture 2>&1 | grep -v '^\s*\(Compiling\|Running\|Finished\)'
