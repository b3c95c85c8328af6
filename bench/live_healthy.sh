#!/bin/bash
# No alert over ten healthy minutes: plays scenarios/live_healthy.json (8 ranks on 2 nodes,
# 16,500 steps of about 37 ms with 0.5 ms of compute jitter, nobody slow) in real time
# through libcommtrace.so, with the collector global rank 0 starts, and prints every alert
# the job's log and alerts.jsonl got (there should be none). Exit 1 on any alert.
# Usage: bench/live_healthy.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: bench/live_healthy.sh BUILD_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
COMMTRACE_TOKEN=live-healthy COMMTRACE_COLLECT_PORT=$port "$build/bin/commtrace-nccl-driver" \
  --scenario "$here/tools/nccl-driver/scenarios/live_healthy.json" --plugin "$build/lib/libcommtrace.so" \
  --out "$out/run" --time-scale 1 > "$out/log" 2>&1
grep "all 8 ranks finished" "$out/log"
alerts=$(grep -c "" "$out/run/alerts.jsonl" || true)
grep -E "commtrace: (STRAGGLER|HANG|RECOVERED)" "$out/log" || true
echo "alerts: $alerts"
rm -rf "$out"
[ "$alerts" = 0 ]
