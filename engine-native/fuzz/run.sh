#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for a bounded time.
#
#   fuzz/run.sh [seconds]     default 60 per target; Maven's test phase runs it
#                             with par.fuzz.seconds (30)
#   longer run, e.g. an hour each on every core:
#     PAR_FUZZ_JOBS=$(nproc) fuzz/run.sh 3600
#
# The committed corpus (fuzz/corpus/<target>: seeds and regressions) is
# replayed first; new inputs go to <build>/corpus/<target>. A crash stops the
# run with the reproducer's path: add the file to fuzz/corpus/<target>/ once
# the bug is fixed, and ctest (fuzz_<target>_corpus) replays it from then on.
# Environment: PAR_FUZZ_BUILD_DIR (default target/cmake-fuzz), PAR_FUZZ_JOBS.
set -euo pipefail

seconds=${1:-60}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(dirname "$here")
build=${PAR_FUZZ_BUILD_DIR:-$src/target/cmake-fuzz}
jobs=${PAR_FUZZ_JOBS:-1}

if ! command -v clang >/dev/null; then
  echo "fuzz: clang is not installed (apt-get install clang)" >&2
  [[ "${CI:-}" == true ]] && exit 1
  echo "fuzz: skipped"
  exit 0
fi

cmake -S "$src" -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPAR_FUZZ=ON -DPAR_BUILD_TESTS=OFF -DPAR_JNI=OFF >/dev/null
cmake --build "$build" --target fuzz_ops fuzz_volume
ctest --test-dir "$build" -L fuzz --output-on-failure

export PAR_FUZZ_DIR="$build/fuzz/scratch"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
declare -A max_len=([ops]=600 [volume]=200)
status=0
for t in ops volume; do
  corpus="$build/corpus/$t"
  artifacts="$build/artifacts/$t/"
  mkdir -p "$corpus" "$artifacts" "$PAR_FUZZ_DIR"
  log="$build/fuzz_$t.log"
  echo "fuzz: fuzz_$t for ${seconds}s (log $log)"
  parallel=()
  ((jobs > 1)) && parallel=(-jobs="$jobs" -workers="$jobs") # each job logs to fuzz-<n>.log in $build
  set +e
  (cd "$build" && "$build/fuzz/fuzz_$t" -max_total_time="$seconds" -max_len="${max_len[$t]}" "${parallel[@]}" \
    -print_final_stats=1 -artifact_prefix="$artifacts" "$corpus" "$here/corpus/$t" >"$log" 2>&1)
  rc=$?
  set -e
  rm -f "$PAR_FUZZ_DIR"/fuzz_"$t".*.px
  grep -hE '^(Done [0-9]+ runs|stat::number_of_executed_units)' "$log" "$build"/fuzz-*.log 2>/dev/null | tail -n "$jobs" || true
  if ((rc != 0)); then
    echo "fuzz: fuzz_$t failed (exit $rc); reproducers in $artifacts:" >&2
    ls -l "$artifacts" >&2
    tail -n 60 "$log" >&2
    status=1
  fi
done
exit $status
