#include "tools/report/output/text_report.h"

#include <algorithm>
#include <cctype>

#include "tools/report/evidence_words.h"
#include "tools/report/output/report_tables.h"

namespace commtrace::report {
namespace {

constexpr size_t kTopRows = 10;   // rankings: stragglers, links, matrix pairs, mismatches, problems
constexpr size_t kLongRows = 20;  // inventories: communicators, bandwidth, overlap

void writeFindings(const Report& r, std::ostream& out) {
  out << "Findings\n";
  if (r.findings.empty()) out << "  none: no straggler, slow link, exposed communication or bandwidth outlier stood out\n";
  for (size_t i = 0; i < r.findings.size(); ++i) out << "  " << i + 1 << ". " << r.findings[i] << '\n';
}

void writeAdvice(const Report& r, std::ostream& out) {
  if (r.advice.empty()) return;
  out << "\nAdvice (what to try, and the numbers behind it)\n";
  for (size_t i = 0; i < r.advice.size(); ++i) {
    std::string advice = r.advice[i].advice;
    if (!advice.empty()) advice[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(advice[0])));
    out << "  " << i + 1 << ". " << advice << ". Because: " << r.advice[i].evidence << ".\n";
  }
}

// "key  value" lines with the values in one column.
void writeFields(const tables::Fields& fields, std::ostream& out) {
  size_t width = 0;
  for (const auto& [key, value] : fields) width = std::max(width, key.size());
  for (const auto& [key, value] : fields) out << "  " << key << std::string(width - key.size() + 2, ' ') << value << '\n';
}

void writeRun(const Report& r, std::ostream& out) {
  out << "\nRun " << r.run.dir << '\n';
  writeFields(tables::runFields(r), out);
  const std::vector<std::string>& problems = r.run.problems;
  if (!problems.empty()) out << "  problems:\n";
  for (size_t i = 0; i < problems.size() && i < kTopRows; ++i) out << "    " << problems[i] << '\n';
  if (problems.size() > kTopRows) out << "    (" << problems.size() - kTopRows << " more: --format json or csv for all)\n";
}

// A titled table, or the sentence saying why it is empty.
void writeSection(const std::string& title, const Table& table, size_t max_rows, const std::string& when_empty, std::ostream& out) {
  out << '\n' << title << '\n';
  if (table.rows.empty()) out << "  " << when_empty << '\n';
  else printTable(table, out, max_rows);
}

void writeStragglers(const StragglerReport& s, std::ostream& out) {
  writeSection("Stragglers (the waiting each rank's own delays caused, traced back from where it was passed on)", tables::stragglers(s.ranks), kTopRows,
               "no collective instance had GPU times on two or more ranks", out);
  for (const StragglerRow& row : s.ranks)
    if (row.flagged) out << "  rank " << row.rank << ": " << evidenceWords(row) << '\n';
  if (!s.ranks.empty()) out << "  " << tables::stragglerConfidenceNote() << '\n';
  if (s.hosts.size() > 1) writeSection("Stragglers by host", tables::stragglerHosts(s.hosts), kTopRows, "", out);
  if (!s.comms.empty()) writeSection("Stragglers by communicator", tables::stragglerComms(s.comms), kTopRows, "", out);
}

void writeLinks(const std::vector<SlowLinkRow>& links, std::ostream& out) {
  writeSection("Links (slowest relative to links of their kind first)", tables::links(links), kTopRows,
               "no op crossing a rank pair had GPU times", out);
  for (const SlowLinkRow& l : links)
    if (l.flagged) out << "  " << l.a << " <-> " << l.b << ": " << evidenceWords(l) << '\n';
  if (!links.empty()) out << "  " << tables::linkConfidenceNote() << '\n';
}

void writeMatrix(const CommMatrix& m, std::ostream& out) {
  writeSection("Communication matrix: heaviest rank pairs (the whole matrix: --format html, json or csv)", tables::heaviestPairs(m),
               kTopRows, "no bytes moved between ranks", out);
  if (!m.model.empty()) out << "  " << m.model << '\n';
}

void writeMismatches(const Report& r, std::ostream& out) {
  writeSection("Mismatches and hangs (" + std::to_string(r.mismatches_total) + ")", tables::mismatches(r.mismatches), kTopRows,
               "none: every rank recorded every instance of its communicators", out);
  if (r.mismatches_total > r.mismatches.size())
    out << "  (" << r.mismatches_total - r.mismatches.size() << " more were counted but not listed)\n";
}

void writeOverlap(const std::vector<OverlapRow>& rows, std::ostream& out) {
  writeSection("Overlap (communication kernels under compute kernels, per rank)", tables::overlap(rows), kLongRows,
               "no process recorded communication kernels", out);
  for (const std::string& reason : tables::unavailableReasons(rows)) out << "  - = not measured: " << reason << '\n';
  if (const std::string note = tables::kernelClockNote(rows); !note.empty()) out << "  " << note << '\n';
  if (const std::string note = tables::outOfOrderNote(rows); !note.empty()) out << "  " << note << '\n';
}

void writePeerWaits(const std::vector<PeerWaitRow>& rows, std::ostream& out) {
  writeSection("Point-to-point waits (pipeline bubbles: who waited for whom in sends and receives)", tables::peerWaits(rows), kTopRows,
               "no send or receive waited for its peer", out);
}

void writeKernels(const KernelBreakdown& k, std::ostream& out) {
  writeSection("GPU kernels (most GPU time, all ranks; each rank's: --format json, csv or html)", tables::kernels(k.top), kTopRows,
               "no CUPTI records: the CUPTI face was off, held by another tool, or found no GPU", out);
  if (!k.types.empty()) writeSection("GPU time by kernel type (per rank)", tables::kernelTypes(k.types), kLongRows, "", out);
}

void writeCudaSync(const std::vector<CudaSyncRow>& rows, std::ostream& out) {
  writeSection("CPU blocked in CUDA synchronisation (per rank, call and stream)", tables::cudaSync(rows), kLongRows,
               "none recorded: no CUDA sync call went through the preload face (not preloaded, COMMTRACE_CUDA_SYNC=0, or "
               "no dynamic libcudart)",
               out);
  if (std::any_of(rows.begin(), rows.end(), [](const CudaSyncRow& r) {
        return std::any_of(r.calls.begin(), r.calls.end(), [](const CudaSyncCallRow& c) { return c.call == "cudaStreamWaitEvent"; });
      }))
    out << "  cudaStreamWaitEvent makes the stream wait, not the CPU: its time is the enqueue\n";
}

}  // namespace

void writeText(const Report& r, std::ostream& out) {
  writeFindings(r, out);
  writeAdvice(r, out);
  writeRun(r, out);
  writeSection("Communicators (" + std::to_string(r.communicators.size()) + ")", tables::communicators(r.communicators), kLongRows,
               "none recorded", out);
  writeSection("Parallelism (recognised from the communicators and their ops)", tables::parallelism(r.parallelism), kLongRows,
               "no communicator ran an op", out);
  writeSection("Bandwidth (nccl-tests algBw and busBw, median over instances)", tables::bandwidth(r.bandwidth), kLongRows,
               "no collective or transfer recorded", out);
  for (const std::string& note : tables::bandwidthNotes(r.bandwidth)) out << "  " << note << '\n';
  writeStragglers(r.stragglers, out);
  writeLinks(r.stragglers.links, out);
  writeMatrix(r.matrix, out);
  writeMismatches(r, out);
  writeOverlap(r.overlap, out);
  writePeerWaits(r.peer_waits, out);
  writeKernels(r.kernels, out);
  writeCudaSync(r.cuda_sync, out);
}

}  // namespace commtrace::report
