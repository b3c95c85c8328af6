"""One rank of the GPU check: NVTX steps around a compute-heavy loop and an AllReduce per
step that runs on a side stream while the next matmuls run, as DDP overlaps its buckets."""
import os
import sys

import torch
import torch.distributed as dist

STEPS = int(os.environ.get("CT_STEPS", "20"))
PROFILE = os.environ.get("CT_TORCH_PROFILER") == "1"


def main() -> int:
    dist.init_process_group("nccl")
    torch.cuda.set_device(0)  # every rank shares the one GPU
    a = torch.randn(2048, 2048, device="cuda")
    grad = torch.randn(16 * 1024 * 1024, device="cuda")
    side = torch.cuda.Stream()
    profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) if PROFILE else None
    if profiler:
        profiler.__enter__()
    for step in range(STEPS):
        torch.cuda.nvtx.range_push(f"train_step {step}")
        torch.cuda.nvtx.range_push("forward")
        for _ in range(8):
            a = torch.tanh(a @ a / 2048)
        torch.cuda.nvtx.range_pop()
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
    if profiler:
        profiler.__exit__(None, None, None)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
