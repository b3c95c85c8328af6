#!/bin/bash
# The live collector at scale: starts `commtrace collect` on a free local port, plays
# RANKS simulated ranks' digests at RATE collectives/s each for SECONDS (bench/collect_load.cc),
# and prints the collector's CPU (share of one core over the run), peak RSS and the traffic
# per rank. The steady state is measured from 10 s in (SECONDS > 10).
# Usage: bench/collect_load.sh BUILD_DIR [RANKS] [RATE] [SECONDS]
set -euo pipefail
build=${1:?usage: bench/collect_load.sh BUILD_DIR [RANKS] [RATE] [SECONDS]}
ranks=${2:-1024}
rate=${3:-20}
seconds=${4:-60}
export COMMTRACE_TOKEN=collect-load-bench
out=$(mktemp)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$build/bin/commtrace" collect --listen "127.0.0.1:$port" ${COLLECT_ARGS:-} --timeout $((seconds + 30)) > "$out.alerts" 2> "$out.err" &
collector=$!
sleep 0.5
ticks() { awk '{print $14 + $15}' "/proc/$collector/stat"; }
start_ticks=$(ticks)
"$build/bin/collect_load" --port "$port" --ranks "$ranks" --rate "$rate" --seconds "$seconds" &
load=$!
sleep 10  # connections made, spool files created: what follows is the steady state
before=$(ticks)
wait "$load"
after=$(ticks)
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$collector/status")
kill "$collector"; wait "$collector" || true
hz=$(getconf CLK_TCK)
awk -v t=$((after - before)) -v all=$((after - start_ticks)) -v hz="$hz" -v s="$seconds" -v kb="$hwm" \
  'BEGIN { printf "collector: %.2f s CPU in the steady state (the last %d s) = %.2f%% of one core; %.2f s in all; peak RSS %.1f MiB\n",
           t / hz, s - 10, 100 * t / hz / (s - 10), all / hz, kb / 1024 }'
echo "alerts printed: $(wc -l < "$out.alerts")"; head -5 "$out.err"
rm -f "$out" "$out.alerts" "$out.err"
