"""Checks `commtrace report --format json` of a run of cupti_nvtx_job.py; prints what it saw
and exits 1 on the first thing missing. Usage: check_report.py REPORT.json [--profiler]"""
import json
import sys


def main() -> int:
    report = json.load(open(sys.argv[1]))
    with_profiler = "--profiler" in sys.argv
    problems = []
    ranks = report["run"]["ranks"]
    print(f"ranks {ranks}, collective instances {report['run']['collective_instances']}")
    if ranks != 2:
        problems.append(f"expected 2 ranks, found {ranks}")
    allreduce = [b for b in report["bandwidth"] if b["func"] == "AllReduce" and b["timed"] > 0]
    if not allreduce:
        problems.append("no AllReduce with GPU times")
    for row in report["overlap"]:
        print(f"rank {row['rank']}: available {row['available']}, overlap {row.get('overlap_pct')}, "
              f"steps {len(row['steps'])} ({row['step_source']}), kernel clock {row.get('kernel_clock')}")
        if with_profiler:
            continue
        if not row["available"]:
            problems.append(f"rank {row['rank']}: overlap not available: {row.get('reason')}")
            continue
        clock = row.get("kernel_clock", {})
        if clock.get("matched", 0) == 0 or clock.get("matched") != clock.get("nccl_kernels"):
            problems.append(f"rank {row['rank']}: NCCL kernels not all matched: {clock}")
        if row["step_source"] != "nvtx":
            problems.append(f"rank {row['rank']}: steps from {row['step_source']}, not the train_step NVTX ranges")
    top = report["kernels"]["top"]
    print("top kernels:", [(k["name"][:60], k["count"]) for k in top[:5]])
    if not with_profiler and not any(k["type"] == "computation" for k in top):
        problems.append("no compute kernel in the breakdown")
    for p in problems:
        print("PROBLEM:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
