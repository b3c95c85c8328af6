// This process's end of live alerts (DESIGN.md, "Live alerts"): the DigestSender the flusher
// sends through, keyed once the process has made an NCCL communicator and knows the job's
// secret, and, on global rank 0 when no standalone collector is named, the `commtrace
// collect` process it starts for the job. Everything here runs on the flusher thread or at
// commtrace_start, never on a caller's; a failure is one "commtrace:" line and live alerts
// off for this process.
#pragma once

#include <cstdint>
#include <string>

#include "sink/digest_sender.h"

namespace commtrace::library {

// The link when COMMTRACE_LIVE is on and a collector address is known (COMMTRACE_COLLECT_ADDR,
// else MASTER_ADDR); nullptr otherwise. run_dir: where the collector's alerts.jsonl goes.
DigestSender* openLiveLink(const std::string& run_dir);

// Before every drain (FlusherOptions::before_drain): keys the link once it can.
void tendLiveLink(uint64_t now_ns);

// At the process's last drain: a collector it started that is stopped is killed.
void endLiveLink();

// In a forked child: the parent's link is not the child's (it opens its own if it records).
void forgetLiveLinkAfterFork();

}  // namespace commtrace::library
