#!/usr/bin/env python3
"""Overlap of communication with computation in Kineto traces, as HTA defines it, computed
without commtrace: prints {"<rank>": {"comm_us": .., "overlapped_us": ..}} as JSON."""
import gzip
import json
import sys


def union(intervals):
    out = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def intersection(xs, ys):
    i = j = total = 0
    while i < len(xs) and j < len(ys):
        lo, hi = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        total += max(0, hi - lo)
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return total


def ns(us):
    return int(us * 1000 + 0.5)


result = {}
for path in sys.argv[1:]:
    with gzip.open(path) if path.endswith(".gz") else open(path) as f:
        trace = json.load(f)
    kernels = [e for e in trace["traceEvents"] if e.get("cat") == "kernel" and e.get("ph") == "X"]
    spans = lambda keep: union([[ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])] for e in kernels if keep(e["name"])])
    comm = spans(lambda n: n.startswith("nccl"))
    comp = spans(lambda n: not n.startswith("nccl"))
    rank = trace.get("distributedInfo", {}).get("rank", 0)
    result[str(rank)] = {"comm_us": sum(b - a for a, b in comm) / 1e3, "overlapped_us": intersection(comm, comp) / 1e3}
print(json.dumps(result))
