#!/usr/bin/env bash
# Runs the GPU tests of a staged build (scripts/stage.sh) on the GPU machine, one process
# per test, JOBS at a time, and prints one line per test (name, exit status, seconds);
# exits non-zero when any failed. Logs go to LOG_DIR/<test>.log, with the test's "::"
# written "." (file names that copy tools take as they are).
#   scripts/gpu-tests-parallel.sh STAGE_DIR LOG_DIR JOBS [TEST...]   (no TEST: all of them)
# The environment passes through, so SCANRT_BULK_MIN_TILES / SCANRT_WAVE_MAX_TILES can
# force one single-pass kernel onto every size (see tests/gpu/kernels.rs).
set -uo pipefail
stage=$(cd "$1" && pwd); logs=$2; jobs=$3; shift 3
mkdir -p "$logs"
bin=$stage/tests/gpu
tests=${*:-$("$bin" --list 2>/dev/null | sed -n 's/: test$//p')}
# Each line is written as its test ends (a test that never ends is named by its absence
# and, after SCANRT_TEST_TIMEOUT seconds, killed with rc=124).
limit=${SCANRT_TEST_TIMEOUT:-900}
: > "$logs/finished.txt"
printf '%s\n' $tests | xargs -P "$jobs" -I{} bash -c '
  start=$SECONDS; timeout "$3" "$0" --exact "$1" --test-threads=1 --nocapture >"$2/${1//::/.}.log" 2>&1
  echo "$1 rc=$? $((SECONDS - start))s" >> "$2/finished.txt"' "$bin" {} "$logs" "$limit"
sort "$logs/finished.txt" | tee "$logs/summary.txt"
[ "$(wc -l < "$logs/summary.txt")" -eq "$(printf '%s\n' $tests | wc -l)" ] && ! grep -q ' rc=[1-9]' "$logs/summary.txt"
