#include "tools/report/output/run_diff_output.h"

#include <nlohmann/json.hpp>

#include "tools/report/format.h"
#include "tools/report/output/table.h"

namespace commtrace::report {
namespace {

constexpr size_t kTextRows = 20;

// "27.6 ms -> 25.1 ms (-9.1%)"; a side without the figure reads "-".
std::string change(double a, double b, std::string (*show)(double)) {
  const std::string from = a > 0 ? show(a) : "-", to = b > 0 ? show(b) : "-";
  if (a <= 0 || b <= 0) return from + " -> " + to;
  return from + " -> " + to + " (" + (b >= a ? "+" : "") + fmt::percent((b - a) / a) + ")";
}

std::string durationOrDash(double us) { return us > 0 ? fmt::duration(us) : "-"; }

// "new", "gone", or for an op in both its total time's change: "+12.5%" (it was left empty).
std::string changeOf(const OpDiffRow& r) {
  if (!r.change.empty()) return r.change;
  if (r.a.time_us_total <= 0) return "-";
  const double ratio = (r.b.time_us_total - r.a.time_us_total) / r.a.time_us_total;
  return (ratio >= 0 ? "+" : "") + fmt::percent(ratio);
}
std::string gbsOrDash(double gbs) { return gbs > 0 ? fmt::fixed(gbs, 2) : "-"; }

Table opsTable(const RunDiff& d) {
  using A = Table::Align;
  Table t{{{"comm"}, {"func"}, {"size"}, {"count A", A::kRight}, {"count B", A::kRight}, {"total A", A::kRight},
           {"total B", A::kRight}, {"mean A", A::kRight}, {"mean B", A::kRight}, {"busBw A GB/s", A::kRight},
           {"busBw B GB/s", A::kRight}, {"algo/proto"}, {"change"}}};
  for (const OpDiffRow& r : d.ops) {
    const std::string algo = r.a.algo_proto == r.b.algo_proto || r.b.count == 0 ? r.a.algo_proto
                             : r.a.count == 0                                  ? r.b.algo_proto
                                                                               : r.a.algo_proto + " -> " + r.b.algo_proto;
    t.rows.push_back({r.comm, r.func, r.bucket, std::to_string(r.a.count), std::to_string(r.b.count), durationOrDash(r.a.time_us_total),
                      durationOrDash(r.b.time_us_total), durationOrDash(r.a.time_us_mean), durationOrDash(r.b.time_us_mean),
                      gbsOrDash(r.a.busbw_gbs), gbsOrDash(r.b.busbw_gbs), algo, changeOf(r)});
  }
  return t;
}

Table ranksTable(const RunDiff& d) {
  using A = Table::Align;
  Table t{{{"rank", A::kRight}, {"step A", A::kRight}, {"step B", A::kRight}, {"exposed/step A", A::kRight},
           {"exposed/step B", A::kRight}, {"straggler A"}, {"straggler B"}}};
  for (const RankDiffRow& r : d.ranks)
    t.rows.push_back({std::to_string(r.rank), durationOrDash(r.step_us_a), durationOrDash(r.step_us_b), durationOrDash(r.exposed_us_a),
                      durationOrDash(r.exposed_us_b), r.straggler_a ? "yes" : "no", r.straggler_b ? "yes" : "no"});
  return t;
}

std::string exposedOrDash(double us) { return us == PathDiffRow::kUnknown ? "-" : fmt::duration(us); }

Table pathsTable(const RunDiff& d) {
  using A = Table::Align;
  Table t{{{"NVTX path"}, {"comm A", A::kRight}, {"comm B", A::kRight}, {"exposed A", A::kRight}, {"exposed B", A::kRight}, {"change"}}};
  for (const PathDiffRow& r : d.paths)
    t.rows.push_back({r.path, durationOrDash(r.comm_us_a), durationOrDash(r.comm_us_b), exposedOrDash(r.exposed_us_a),
                      exposedOrDash(r.exposed_us_b), r.change});
  return t;
}

nlohmann::json orNull(double us) { return us == PathDiffRow::kUnknown ? nlohmann::json(nullptr) : nlohmann::json(us); }

void listFindings(const char* title, const std::vector<DiffFinding>& findings, std::ostream& out) {
  out << title << (findings.empty() ? ": none\n" : "\n");
  for (const DiffFinding& f : findings) out << "  - " << f.finding << '\n';
}

nlohmann::json findingsJson(const std::vector<DiffFinding>& findings) {
  nlohmann::json out = nlohmann::json::array();
  for (const DiffFinding& f : findings) out.push_back({{"kind", f.kind}, {"subject", f.subject}, {"finding", f.finding}});
  return out;
}

// "rank 6: estimated 2.3 ms per step, measured 2.4 ms (the estimate is 96% of it)".
void listGains(const std::vector<GainCheck>& gains, std::ostream& out) {
  if (gains.empty()) return;
  out << "\nWhat A estimated fixing its culprits gone in B would save per step, against B's measured step\n";
  for (const GainCheck& g : gains) {
    out << "  - " << g.subject << ": estimated " << fmt::duration(g.estimated_us) << ", measured " << fmt::duration(g.measured_us);
    if (g.measured_us > 0) out << " (the estimate is " << fmt::percent(g.estimated_us / g.measured_us) << " of it)";
    out << '\n';
  }
}

nlohmann::json sideJson(const OpDiffSide& s) {
  return {{"count", s.count}, {"time_us_total", s.time_us_total}, {"time_us_mean", s.time_us_mean}, {"busbw_gbs", s.busbw_gbs},
          {"algo_proto", s.algo_proto}};
}

}  // namespace

void writeDiffText(const RunDiff& d, const std::string& name_a, const std::string& name_b, std::ostream& out) {
  out << "commtrace diff\n  A: " << name_a << "\n  B: " << name_b << "\n\n";
  for (const std::string& w : d.warnings) out << "Warning: " << w << '\n';
  if (!d.warnings.empty()) out << '\n';
  out << "Step time (median rank's mean): " << change(d.step_us_a, d.step_us_b, fmt::duration) << '\n';
  out << "Communication time (every op's transfer times summed): " << change(d.comm_us_a, d.comm_us_b, fmt::duration) << "\n\n";
  listFindings("Culprits and losses only in B (new)", d.findings_new, out);
  listFindings("Culprits and losses only in A (gone in B)", d.findings_gone, out);
  listFindings("Culprits and losses in both (B's words)", d.findings_kept, out);
  listGains(d.gains, out);
  out << "\nOps by (communicator, func, size), most changed total time first\n";
  printTable(opsTable(d), out, kTextRows, "--format json for all");
  out << "\nRanks, a changed straggler verdict first, then the most changed step and exposed time\n";
  printTable(ranksTable(d), out, kTextRows, "--format json for all");
  if (d.paths.empty()) return;
  out << "\nNVTX paths (communication summed over ranks), most changed exposed time first\n";
  printTable(pathsTable(d), out, kTextRows, "--format json for all");
}

void writeDiffJson(const RunDiff& d, const std::string& name_a, const std::string& name_b, std::ostream& out) {
  nlohmann::json j{{"schema", "commtrace.diff.v1"},
                   {"a", name_a},
                   {"b", name_b},
                   {"step_us", {{"a", d.step_us_a}, {"b", d.step_us_b}}},
                   {"comm_time_us", {{"a", d.comm_us_a}, {"b", d.comm_us_b}}},
                   {"warnings", d.warnings},
                   {"findings_new", findingsJson(d.findings_new)},
                   {"findings_gone", findingsJson(d.findings_gone)},
                   {"findings_kept", findingsJson(d.findings_kept)},
                   {"gains", nlohmann::json::array()},
                   {"ops", nlohmann::json::array()},
                   {"ranks", nlohmann::json::array()},
                   {"paths", nlohmann::json::array()}};
  for (const GainCheck& g : d.gains)
    j["gains"].push_back({{"subject", g.subject}, {"finding", g.finding}, {"estimated_step_saved_us", g.estimated_us}, {"measured_step_saved_us", g.measured_us}});
  for (const OpDiffRow& r : d.ops)
    j["ops"].push_back({{"comm", r.comm}, {"func", r.func}, {"bucket", r.bucket}, {"change", r.change}, {"a", sideJson(r.a)}, {"b", sideJson(r.b)}});
  for (const RankDiffRow& r : d.ranks)
    j["ranks"].push_back({{"rank", r.rank},
                          {"step_us", {{"a", r.step_us_a}, {"b", r.step_us_b}}},
                          {"exposed_us_per_step", {{"a", r.exposed_us_a}, {"b", r.exposed_us_b}}},
                          {"straggler", {{"a", r.straggler_a}, {"b", r.straggler_b}}}});
  for (const PathDiffRow& r : d.paths)
    j["paths"].push_back({{"path", r.path},
                          {"change", r.change},
                          {"comm_us", {{"a", r.comm_us_a}, {"b", r.comm_us_b}}},
                          {"exposed_us", {{"a", orNull(r.exposed_us_a)}, {"b", orNull(r.exposed_us_b)}}}});
  out << j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
}

}  // namespace commtrace::report
