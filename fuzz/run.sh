#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD_DIR for SECONDS each, one after the
# other, with a persistent corpus per target (fuzz/corpus-<target>, seeded
# from fuzz/seeds/<target> and from fuzz/regressions/<target>: inputs that once
# found a bug). Prints one summary line per target.
set -uo pipefail
build=${1:?build dir}
seconds=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
status=0
for bin in "$build"/*_fuzz; do
  name=$(basename "$bin")
  corpus="$here/corpus-$name"
  mkdir -p "$corpus"
  seeds=()
  for d in "$here/seeds/$name" "$here/regressions/$name"; do
    [ -d "$d" ] && seeds+=("$d")
  done
  log="$build/$name.log"
  echo "[fuzz] $name for ${seconds}s (log: $log)"
  "$bin" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 "$corpus" "${seeds[@]}" >"$log" 2>&1
  rc=$?
  execs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  echo "[fuzz] $name: exit $rc, ${execs:-?} executions, $cov, corpus $(ls "$corpus" | wc -l) files"
  [ $rc -eq 0 ] || { status=1; grep -m5 -E 'ERROR|runtime error|==[0-9]+==' "$log"; }
done
exit $status
