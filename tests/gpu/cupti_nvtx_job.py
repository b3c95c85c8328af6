"""One rank of the GPU check: NVTX steps around a compute-heavy loop and an AllReduce per
step that runs on a side stream while the next matmuls run, as DDP overlaps its buckets.
CT_STEPS steps; CT_DELAY_RANK sleeps CT_DELAY_MS on the host before each AllReduce (a planted
straggler); CT_TORCH_PROFILER=1 holds CUPTI with torch.profiler. Prints the median step time."""
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

STEPS = int(os.environ.get("CT_STEPS", "20"))
PROFILE = os.environ.get("CT_TORCH_PROFILER") == "1"
DELAY_RANK = int(os.environ.get("CT_DELAY_RANK", "-1"))
DELAY_S = float(os.environ.get("CT_DELAY_MS", "0")) / 1000


def main() -> int:
    dist.init_process_group("nccl")
    torch.cuda.set_device(0)  # every rank shares the one GPU
    delay = DELAY_S if dist.get_rank() == DELAY_RANK else 0.0
    a = torch.randn(2048, 2048, device="cuda")
    grad = torch.randn(16 * 1024 * 1024, device="cuda")
    side = torch.cuda.Stream()
    profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) if PROFILE else None
    if profiler:
        profiler.__enter__()
    step_s = []
    for step in range(STEPS):
        began = time.perf_counter()
        torch.cuda.nvtx.range_push(f"train_step {step}")
        torch.cuda.nvtx.range_push("forward")
        for _ in range(8):
            a = torch.tanh(a @ a / 2048)
        torch.cuda.nvtx.range_pop()
        if delay:
            time.sleep(delay)
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            dist.all_reduce(grad)
        torch.cuda.nvtx.range_push("backward")
        for _ in range(8):
            a = torch.tanh(a @ a / 2048)
        torch.cuda.nvtx.range_pop()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        step_s.append(time.perf_counter() - began)
    if profiler:
        profiler.__exit__(None, None, None)
    steady = step_s[3:] or step_s
    print(f"rank {dist.get_rank()}: {STEPS} steps, median step {statistics.median(steady) * 1e3:.2f} ms", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
