#!/usr/bin/env bash
# The report's memory and time on the run shapes issue #15 sets targets for, each reported
# to JSON under /usr/bin/time -v:
#   ddp-64x100k   64 ranks on one world communicator, 100,000 bucketed AllReduce each
#   ddp-64x1M     the same, 10x longer (peak RSS should stay within 10 % of the above)
#   mixed-1024x10k 1,024 ranks, world + per-node tp + cross-node dp communicators, sends
#   mixed-64x100k 64 ranks of that shape, 100,000 collectives each (320k sends/receives)
#   mixed-64x1M   the same, 10x longer (peak RSS should not grow with the sends either)
#   mixed-4x400k  4 ranks of that shape, 400,000 collectives each: a small job's long run,
#                 where the root-cause walk has thousands of ops waiting per process at once
#   cupti-8x50k   8 DDP ranks with CUPTI: 16 compute kernels per collective (6.4 M kernels)
#   cupti-8x200k  the same, 4x longer (peak RSS should not grow with the kernels)
#   wide-16384x2k 16,384 ranks of the mixed shape, 2,000 collectives each (issue #37's width:
#                 <= 20 s, <= 1 GiB); wide-65536x500 65,536 ranks, 500 each (<= 4 GiB).
#                 Not run unless named in ONLY: minutes each, 450 MB of files each
# Runs are written by `commtrace-synth --run-dir` in chunks as the library's flusher cuts
# them (every 200 ms of a rank's clock); FLUSH_MS=0 writes one chunk per 16,384 records
# instead, the reader's worst case.
#
#   bench/report_targets.sh [BUILD_DIR] [WORK_DIR]
#
# BUILD_DIR (default build) needs bin/commtrace-synth and bin/commtrace. WORK_DIR (default
# /tmp/commtrace-report-targets) keeps the runs between invocations (~3 GB in all).
# ONLY="ddp-64x100k" picks some. Prints one line per run: its files' size, wall, CPU
# (user + system, all threads) and peak RSS.
set -euo pipefail
source "$(dirname "$0")/report_timing.sh"

build=${1:-build}
work=${2:-/tmp/commtrace-report-targets}
flush_ms=${FLUSH_MS:-200}
only=${ONLY:-"ddp-64x100k ddp-64x1M mixed-1024x10k mixed-64x100k mixed-64x1M mixed-4x400k cupti-8x50k cupti-8x200k"}

for tool in "$build/bin/commtrace-synth" "$build/bin/commtrace" /usr/bin/time; do
  [[ -x $tool ]] || { echo "commtrace: $tool not found; build it first (make -C $build commtrace_synth commtrace_cli)" >&2; exit 2; }
done

declare -A args=(
  [ddp-64x100k]="--shape ddp --ranks 64 --collectives 100000"
  [ddp-64x1M]="--shape ddp --ranks 64 --collectives 1000000"
  [mixed-1024x10k]="--shape mixed --ranks 1024 --collectives 10000"
  [mixed-64x100k]="--shape mixed --ranks 64 --collectives 100000"
  [mixed-64x1M]="--shape mixed --ranks 64 --collectives 1000000"
  [mixed-4x400k]="--shape mixed --ranks 4 --collectives 400000"
  [cupti-8x50k]="--shape ddp --ranks 8 --collectives 50000 --kernels 16"
  [cupti-8x200k]="--shape ddp --ranks 8 --collectives 200000 --kernels 16"
  [wide-16384x2k]="--shape mixed --ranks 16384 --collectives 2000"
  [wide-65536x500]="--shape mixed --ranks 65536 --collectives 500"
)

mkdir -p "$work"
printf '%-16s %9s %8s %7s %12s\n' run disk_MB wall_s cpu_s peak_RSS_MB
for name in $only; do
  [[ -n ${args[$name]:-} ]] || { echo "commtrace: no run named $name (${!args[*]})" >&2; exit 2; }
  dir="$work/$name-flush$flush_ms"
  if [[ ! -d $dir ]]; then
    # shellcheck disable=SC2086  # the arguments are words
    "$build/bin/commtrace-synth" --run-dir "$dir" ${args[$name]} --flush-ms "$flush_ms" >/dev/null
  fi
  timing=$(reportTiming "$build" "$dir") || exit 1
  read -r wall cpu rss_mb <<<"$timing"
  printf '%-16s %9d %8.2f %7.2f %12d\n' "$name" "$(du -sm "$dir" | cut -f1)" "$wall" "$cpu" "$rss_mb"
done
