#!/usr/bin/env bash
# A short coverage-guided fuzz run of every target (cargo-fuzz, libFuzzer) on the stable toolchain.
#   fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]     default: 30 s each, all targets
# The committed seed corpus (fuzz/corpus/<target>) is copied to a scratch directory first, so a run never
# changes the repository; a crash leaves its input in fuzz/artifacts/<target>/ and fails the run.
# Installs cargo-fuzz from the crate registry when it is missing. Prints the executions of each target.
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-30}
shift || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(ber message filter dn ldif)

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz"
    cargo install --locked cargo-fuzz
fi
# -s none: no sanitizer, which needs no nightly toolchain; the targets are safe Rust, so libFuzzer's
# coverage feedback with panics and assertions as the oracle is what matters.
cargo fuzz build -s none -O

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
total=0
failed=()
for target in "${targets[@]}"; do
    mkdir -p "$scratch/$target"
    cp -r "corpus/$target/." "$scratch/$target/"
    log="$scratch/$target.log"
    if cargo fuzz run -s none -O "$target" "$scratch/$target" -- \
        -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=1024 >"$log" 2>&1; then
        runs=$(grep -Eo '^Done [0-9]+ runs' "$log" | grep -Eo '[0-9]+' || echo 0)
        echo "fuzz $target: $runs executions in ${seconds} s, no failure"
        total=$((total + runs))
    else
        echo "fuzz $target: FAILED"
        grep -E 'panicked|ERROR|SUMMARY|artifact' "$log" | head -20 || tail -30 "$log"
        failed+=("$target")
    fi
done
echo "fuzz: $total executions over ${#targets[@]} targets"
[ ${#failed[@]} -eq 0 ]
