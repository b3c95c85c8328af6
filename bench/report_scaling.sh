#!/usr/bin/env bash
# How `commtrace report` grows with the run: synthetic runs of 8 to 256 ranks (written by
# `commtrace-synth --run-dir`, see tools/synthetic/run_writer.h), each reported to JSON
# under /usr/bin/time -v for wall time and peak RSS.
#
#   bench/report_scaling.sh [BUILD_DIR] [WORK_DIR]
#
# BUILD_DIR (default build-release) needs bin/commtrace-synth and bin/commtrace
# (bin/report_load_bench times the loading half alone). WORK_DIR (default
# /tmp/commtrace-report-scaling) keeps the runs between invocations (about 13 bytes per
# record in 200 ms chunks: ~82 MB for 6.4M collective records).
#
# Sizes: 100,000 collectives per rank up to 64 ranks (the issue's 6.4M rank-records at 64),
# then 6.4M rank-records in total (50,000 per rank at 128, 25,000 at 256) so that the
# largest runs stay within this machine's memory and time; RANKS="8 64" picks others.
# SHAPE=ddp (default mixed) writes the plain data-parallel shape instead: one world
# communicator of all ranks, bucketed AllReduce (`commtrace-synth --shape`).
set -euo pipefail
source "$(dirname "$0")/report_timing.sh"

build=${1:-build-release}
work=${2:-/tmp/commtrace-report-scaling}
ranks_list=${RANKS:-"8 16 32 64 128 256"}
shape=${SHAPE:-mixed}
max_rank_records=6400000

for tool in "$build/bin/commtrace-synth" "$build/bin/commtrace" /usr/bin/time; do
  [[ -x $tool ]] || { echo "commtrace: $tool not found; build it first (make -C $build commtrace_synth commtrace_cli)" >&2; exit 2; }
done

mkdir -p "$work"
echo "measuring: commtrace report --format json ($shape runs)"
# cpu_s (user + system, all threads) says what wall_s would be on an idle machine when
# other work shares the cores.
printf '%6s %12s %14s %9s %8s %7s %12s\n' ranks colls/rank rank-records disk_MB wall_s cpu_s peak_RSS_MB
for ranks in $ranks_list; do
  per_rank=$((max_rank_records / ranks))
  ((per_rank > 100000)) && per_rank=100000
  dir="$work/$shape-ranks$ranks-colls$per_rank"
  if [[ ! -d $dir ]]; then
    "$build/bin/commtrace-synth" --run-dir "$dir" --shape "$shape" --ranks "$ranks" --collectives "$per_rank" >/dev/null
  fi
  timing=$(reportTiming "$build" "$dir") || exit 1
  read -r wall cpu rss_mb <<<"$timing"
  disk_mb=$(du -sm "$dir" | cut -f1)
  printf '%6d %12d %14d %9d %8.2f %7.2f %12d\n' "$ranks" "$per_rank" $((ranks * per_rank)) "$disk_mb" "$wall" "$cpu" "$rss_mb"
done
