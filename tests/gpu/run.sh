#!/usr/bin/env bash
# The GPU check (tests/gpu/README.md). Run from the repository root on a GPU machine:
#   bash tests/gpu/run.sh [OUT_DIR]
# CT_PREFIX=DIR takes DIR/lib/libcommtrace.so and DIR/bin/commtrace built elsewhere (a GPU
# machine without the tools' libraries); unset, both are built here.
set -uo pipefail
out=${1:-${OUT:-/tmp/commtrace-gpu}}
mkdir -p "$out"
if [[ -z "${CT_PREFIX:-}" ]]; then
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCOMMTRACE_TESTS=OFF -DCOMMTRACE_BENCHMARKS=OFF > "$out/cmake.log" || exit 1
  cmake --build build-gpu -j"$(nproc)" --target commtrace_so commtrace_cli > "$out/build.log" || exit 1
  CT_PREFIX=$PWD/build-gpu
fi
CT_PREFIX=$(cd "$CT_PREFIX" && pwd)
lib=$CT_PREFIX/lib/libcommtrace.so
commtrace=$CT_PREFIX/bin/commtrace
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())' | tee -a "$out/gpu.txt"
failures=0

# Two ranks on the one GPU: each its own NCCL_HOSTID, so NCCL takes them for two hosts and
# talks over loopback sockets (DESIGN.md, "Testing without a GPU"). torch's store listens on
# 29500; the collector rank 0 starts takes COMMTRACE_COLLECT_PORT's 29517.
run_job() {  # name, then VAR=value... for both ranks (LD_PRELOAD= to run without the preload)
  local name=$1; shift
  local dir=$out/$name
  rm -rf "$dir" "$dir".*
  local pids=() began=$SECONDS
  for rank in 0 1; do
    env LD_PRELOAD="$lib" RANK=$rank WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 \
      NCCL_HOSTID=ct-gpu-host$rank NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 \
      COMMTRACE_DIR="$dir" COMMTRACE_JOB_ID="ct-gpu-$name" "$@" \
      timeout 90 python3 tests/gpu/cupti_nvtx_job.py > "$dir.rank$rank.log" 2>&1 &
    pids+=($!)
  done
  local status=0
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  echo "== $name: exit $status after $((SECONDS - began)) s"
  grep -h "commtrace\|median step\|Error\|error" "$dir".rank*.log | head -20
  if [[ -d "$dir" ]]; then
    "$commtrace" report "$dir" > "$dir.txt" 2>&1
    "$commtrace" report "$dir" --format json --out "$dir.json" 2>> "$dir.txt"
  fi
  [[ $status == 0 ]] || failures=$((failures + 1))
}

check() {  # report name, check_report.py options...
  local name=$1; shift
  echo "== check $name $*"
  python3 tests/gpu/check_report.py "$out/$name.json" "$@" || failures=$((failures + 1))
}

run_job baseline LD_PRELOAD= CT_STEPS=40
run_job plain CT_STEPS=40
check plain --steps 40
run_job profiler CT_STEPS=20 CT_TORCH_PROFILER=1
grep -h "CUPTI is held" "$out"/profiler.rank*.log || { echo "PROBLEM: no back-off line with torch.profiler active"; failures=$((failures + 1)); }
check profiler --profiler
mkdir -p "$out/prom"
run_job straggler CT_STEPS=250 CT_DELAY_RANK=1 CT_DELAY_MS=20 COMMTRACE_PROM_DIR="$out/prom"
grep -h "STRAGGLER" "$out"/straggler.rank0.log | head -3 || { echo "PROBLEM: no live STRAGGLER line in rank 0's log"; failures=$((failures + 1)); }
check straggler --straggler 1
run_job plugin-only LD_PRELOAD= NCCL_PROFILER_PLUGIN="$lib" COMMTRACE_LIVE=0 CT_STEPS=20
check plugin-only --plugin-only
run_job proxy CT_STEPS=10 COMMTRACE_PROXY_EVENTS=1
check proxy --steps 10
for f in "$out"/proxy/*.ctrace; do "$commtrace" dump "$f" 2>&1 >/dev/null | tee -a "$out/proxy.dump.txt"; done
grep -q "proxy" "$out/proxy.dump.txt" || { echo "PROBLEM: no proxy records with COMMTRACE_PROXY_EVENTS=1"; failures=$((failures + 1)); }
echo "== $failures failure(s)"
exit $((failures > 0))
