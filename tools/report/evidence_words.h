// A straggler's and a slow link's evidence in words, from the figures their rows carry: the
// analyses decide and measure, the writers (text, JSON, CSV, HTML) and the findings say it.
#pragma once

#include <string>

#include "tools/report/analyses/live_drops.h"
#include "tools/report/analyses/live_hangs.h"
#include "tools/report/analyses/live_stragglers.h"
#include "tools/report/report.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// "last in 100.0% of 3000 instances ... where chance gives 26.2% (z = 102.4 standard
// deviations); caused 5.59 s of waiting, ...", and for a flagged rank what decided its class.
std::string evidenceWords(const StragglerRow& row);
// "best 9.72 GB/s over 1200 ops (300 on this pair alone), 21% of the 45.1 GB/s median of 24
// inter-host links", or that too few links of its kind were measured.
std::string evidenceWords(const SlowLinkRow& row);
// A parallelism row's pattern, communicators and evidence in words, from its kinds, labels
// and uses: "tensor parallel"; "tp0, tp1"; "AllReduce 48 per step (8-16 MiB)".
void describeParallelism(ParallelismRow& row);
// Why a live straggler was late, in words ("compute: ..."), for its alert line.
std::string liveClassWords(const LiveAlert& a);
// One line for the training log: "commtrace: STRAGGLER rank 11 (host h2, GPU 3) +4.1 ms per
// step late at 97% of AllReduce on dp.3 since 12:03:41.000 UTC [compute: ...; others kept
// waiting 6% of their time, confidence 0.93]", or the RECOVERED line that ends it.
std::string alertLine(const RunModel& run, const LiveAlert& alert);
// "commtrace: HANG AllReduce #4812 on dp.3: ranks 0-6 waiting 10.2 s; rank 7 last seen at
// AllReduce #4811", or the RECOVERED line that ends it.
std::string hangLine(const RunModel& run, const HangAlert& alert);
// "commtrace: DROPS rank 3 (host h0, GPU 3) lost 1024 records before its trace file since
// 12:03:41.000 UTC (...)", or the RECOVERED line that ends it.
std::string dropLine(const RunModel& run, const DropAlert& alert);
// "AllReduce #4811" (NCCL's seqNumber), "Send #12 to 3", "Recv #12 from 3" (comm ranks).
std::string hungOpWords(const RunModel& run, const HungOp& op);

}  // namespace commtrace::report
