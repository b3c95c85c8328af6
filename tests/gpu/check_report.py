"""Checks `commtrace report --format json` of a run of cupti_nvtx_job.py; prints what it saw
and exits 1 if anything is missing.
Usage: check_report.py REPORT.json [--profiler | --plugin-only] [--straggler RANK]
  --profiler     torch.profiler held CUPTI: no kernels expected, NCCL ops still recorded
  --plugin-only  NCCL loaded the library as its profiler plugin, nothing preloaded: NCCL ops only
  --straggler R  rank R was delayed: it must be the one flagged straggler
  --steps N      the job ran N train_step ranges: each rank's overlap must find all N"""
import argparse
import json
import sys


def check_overlap(report, steps, problems):
    for row in report["overlap"]:
        if steps is not None and len(row["steps"]) != steps:
            problems.append(f"rank {row['rank']}: {len(row['steps'])} steps found, the job ran {steps}")
        if not row["available"]:
            problems.append(f"rank {row['rank']}: overlap not available: {row.get('reason')}")
            continue
        clock = row.get("kernel_clock", {})
        if clock.get("matched", 0) == 0 or clock.get("matched") != clock.get("nccl_kernels"):
            problems.append(f"rank {row['rank']}: NCCL kernels not all matched: {clock}")
        if row["step_source"] != "nvtx":
            problems.append(f"rank {row['rank']}: steps from {row['step_source']}, not the train_step NVTX ranges")
    if not any(k["type"] == "computation" for k in report["kernels"]["top"]):
        problems.append("no compute kernel in the breakdown")


def check_straggler(report, rank, problems):
    flagged = [s["rank"] for s in report["stragglers"] if s["flagged"]]
    print("flagged stragglers:", flagged)
    if flagged != [rank]:
        problems.append(f"expected rank {rank} alone flagged, found {flagged}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("report")
    parser.add_argument("--profiler", action="store_true")
    parser.add_argument("--plugin-only", action="store_true")
    parser.add_argument("--straggler", type=int)
    parser.add_argument("--steps", type=int)
    args = parser.parse_args()
    report = json.load(open(args.report))
    problems = []
    ranks = report["run"]["ranks"]
    print(f"ranks {ranks}, collective instances {report['run']['collective_instances']}")
    if ranks != 2:
        problems.append(f"expected 2 ranks, found {ranks}")
    for b in report["bandwidth"]:
        print("bandwidth:", {k: b.get(k) for k in ("comm_name", "func", "bucket", "algo", "proto", "count", "timed", "time_us_p50", "busbw_gbs_p50")})
    if not [b for b in report["bandwidth"] if b["func"] == "AllReduce" and b["timed"] > 0]:
        problems.append("no AllReduce with GPU times")
    for row in report["overlap"]:
        print(f"rank {row['rank']}: available {row['available']}, overlap {row.get('overlap_pct')}, "
              f"steps {len(row['steps'])} ({row['step_source']}), kernel clock {row.get('kernel_clock')}")
    print("top kernels:", [(k["name"][:60], k["count"]) for k in report["kernels"]["top"][:5]])
    print("findings:", *report["findings"], sep="\n  ")
    if not (args.profiler or args.plugin_only):
        check_overlap(report, args.steps, problems)
    if args.straggler is not None:
        check_straggler(report, args.straggler, problems)
    for p in problems:
        print("PROBLEM:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
