#!/usr/bin/env bash
# The GPU check (tests/gpu/README.md). Run from the repository root on a GPU machine:
#   bash tests/gpu/run.sh [OUT_DIR]
set -euo pipefail
out=${1:-${OUT:-/tmp/commtrace-gpu}}
mkdir -p "$out"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCOMMTRACE_TESTS=OFF -DCOMMTRACE_BENCHMARKS=OFF > "$out/cmake.log"
cmake --build build-gpu -j"$(nproc)" --target commtrace_so commtrace_cli > "$out/build.log"
lib=$PWD/build-gpu/lib/libcommtrace.so
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())' | tee -a "$out/gpu.txt"

# Two ranks on the one GPU: each its own NCCL_HOSTID, so NCCL takes them for two hosts and
# talks over loopback sockets (DESIGN.md, "Testing without a GPU").
run_job() {  # name, extra environment...
  local name=$1; shift
  local dir=$out/$name
  rm -rf "$dir"
  local pids=()
  for rank in 0 1; do
    env "$@" RANK=$rank WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517 \
      NCCL_HOSTID=ct-gpu-host$rank NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 \
      COMMTRACE_DIR="$dir" COMMTRACE_JOB_ID="ct-gpu-$name" LD_PRELOAD="$lib" \
      python3 tests/gpu/cupti_nvtx_job.py > "$dir.rank$rank.log" 2>&1 &
    pids+=($!)
  done
  local status=0
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  echo "== $name: exit $status"; cat "$dir.rank0.log" | grep commtrace || true
  build-gpu/bin/commtrace report "$dir" > "$dir.txt" 2>&1 || true
  build-gpu/bin/commtrace report "$dir" --format json --out "$dir.json"
  return $status
}

mkdir -p "$out"
run_job plain
python3 tests/gpu/check_report.py "$out/plain.json"
run_job profiler CT_TORCH_PROFILER=1
grep -h "CUPTI is held" "$out"/profiler.rank*.log || echo "PROBLEM: no back-off line with torch.profiler active"
python3 tests/gpu/check_report.py "$out/profiler.json" --profiler
