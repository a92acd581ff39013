#!/bin/sh
# Fills fuzz/corpus/markdown with the seeds: the unit-test inputs in seeds/markdown/ and every
# .md file of the shared conformance cases (when ../../shared is checked out beside the project).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out="$here/corpus/markdown"
mkdir -p "$out"
cp "$here"/seeds/markdown/* "$out"/
cases="$here/../../shared/conformance/cases"
if [ -d "$cases" ]; then
    find "$cases" -path '*/tree/*' -name '*.md' -type f | while read -r f; do
        # Flatten the path into a unique file name.
        name=$(printf '%s' "${f#"$cases"/}" | tr '/' '_')
        cp "$f" "$out/$name"
    done
fi
echo "seeded $(ls "$out" | wc -l) files in $out"
