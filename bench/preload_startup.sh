#!/usr/bin/env bash
# What LD_PRELOAD=libcommtrace.so adds to the start (and exit) of a process that never
# records: the shells, compilers and launchers of a job. The issue's budget is 1 ms.
#
#   bench/preload_startup.sh [BUILD_DIR] [PROGRAM...]
#
# BUILD_DIR (default build-release) needs lib/libcommtrace.so; PROGRAM defaults to
# /bin/true. RUNS processes per batch (default 500), ROUNDS batches each way (default 7),
# alternating plain and preloaded so that a busy neighbour slows both alike; the figure is
# the median over rounds of (preloaded batch - plain batch) / RUNS. Each preloaded process
# finds NCCL_PROFILER_PLUGIN and NVTX_INJECTION64_PATH unset, so it also sets them and
# says so on stderr (sent to /dev/null): the first process of a job, the dearest case.
set -euo pipefail

build=${1:-build-release}
shift || true
program=("${@:-/bin/true}")
library=$(realpath "$build/lib/libcommtrace.so" 2>/dev/null || true)
runs=${RUNS:-500}
rounds=${ROUNDS:-7}

[[ -f $library ]] || { echo "commtrace: $build/lib/libcommtrace.so not found; build it first (cmake --build $build --target commtrace_so)" >&2; exit 2; }
command -v "${program[0]}" >/dev/null || { echo "commtrace: ${program[0]} not found" >&2; exit 2; }

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# Anything recorded would land here: a process that never records must leave it empty.
export COMMTRACE_DIR=$scratch/run

nowNs() { date +%s%N; }

# Nanoseconds for $runs starts of the program, with LD_PRELOAD=$1 ('' for none).
batchNs() {
  local preload=$1 start end i
  start=$(nowNs)
  if [[ -n $preload ]]; then
    for ((i = 0; i < runs; i++)); do LD_PRELOAD=$preload "${program[@]}" >/dev/null 2>&1; done
  else
    for ((i = 0; i < runs; i++)); do "${program[@]}" >/dev/null 2>&1; done
  fi
  end=$(nowNs)
  echo $((end - start))
}

echo "program: ${program[*]}"
echo "library: $library"
echo "$rounds rounds of $runs processes each way"
printf '%5s %14s %14s %12s\n' round plain_us/proc preload_us/proc added_us
diffs=()
for ((r = 1; r <= rounds; r++)); do
  plain=$(batchNs '')
  preloaded=$(batchNs "$library")
  added=$(((preloaded - plain) / runs))
  diffs+=("$added")
  printf '%5d %14.1f %14.1f %12.1f\n' "$r" "$(bc -l <<<"$plain / $runs / 1000")" \
    "$(bc -l <<<"$preloaded / $runs / 1000")" "$(bc -l <<<"$added / 1000")"
done
median=$(printf '%s\n' "${diffs[@]}" | sort -n | sed -n "$(((rounds + 1) / 2))p")
printf 'median added per process: %.1f us (budget 1000 us)\n' "$(bc -l <<<"$median / 1000")"
if [[ -e $COMMTRACE_DIR ]] && [[ -n $(ls -A "$COMMTRACE_DIR") ]]; then
  echo "commtrace: a process that never records left files in $COMMTRACE_DIR" >&2
  exit 1
fi
