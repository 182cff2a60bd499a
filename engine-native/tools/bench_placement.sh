#!/usr/bin/env bash
# Runs par_bench for every KV-size mix (S M L SD MD LD) under every placement
# policy (hybrid, in-place, in-log): a load of N pairs, then N updates, and
# prints one Markdown table row per run. Usage:
#   engine-native/tools/bench_placement.sh [N] [par_bench path]
# PAR_BENCH_ARGS adds par_bench options to every run (e.g. "--l0-size 16777216").
set -euo pipefail
n=${1:-1000000}
bench=${2:-engine-native/target/cmake-release/par_bench}
jemalloc=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
preload=()
[[ -e $jemalloc ]] && preload=(env LD_PRELOAD=$jemalloc)

echo "| mix | placement | load ops/s | load I/O amp. | update ops/s | update I/O amp. | CPU µs/op (load, update) | space amp. | GC relocated MiB |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
for mix in S M L SD MD LD; do
  for placement in hybrid in-place in-log; do
    out=$("${preload[@]}" "$bench" --keys "$n" --updates "$n" --mix "$mix" --placement "$placement" \
          --report-every "$((n * 10))" ${PAR_BENCH_ARGS:-})
    field() { grep -E "^$1:" <<<"$out" | head -1; }
    load_ops=$(field load | sed -E 's/.*= ([0-9]+) ops\/s.*/\1/')
    load_cpu=$(field load | sed -E 's/.*= ([0-9.]+) us\/op.*/\1/')
    load_amp=$(grep -E '^load: device' <<<"$out" | sed -E 's/.*amplification ([0-9.]+).*/\1/')
    upd_ops=$(field update | sed -E 's/.*= ([0-9]+) ops\/s.*/\1/')
    upd_cpu=$(field update | sed -E 's/.*= ([0-9.]+) us\/op.*/\1/')
    upd_amp=$(grep -E '^update: device' <<<"$out" | sed -E 's/.*amplification ([0-9.]+).*/\1/')
    space=$(grep -E '^space:' <<<"$out" | sed -E 's/.*amplification ([0-9.]+).*/\1/')
    gc=$(grep -E '^classes:' <<<"$out" | sed -E 's/.*GC [0-9]+ runs, ([0-9.]+) MiB relocated.*/\1/')
    echo "| $mix | $placement | $((load_ops / 1000)) K | $load_amp | $((upd_ops / 1000)) K | $upd_amp | $load_cpu, $upd_cpu | $space | $gc |"
  done
done
