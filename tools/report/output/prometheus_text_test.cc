// The live metrics' text: label values escaped as the exposition format wants, a straggler's
// series present while it straggles, and every metric the Grafana dashboard in the repository
// queries one the text carries.
#include "tools/report/output/prometheus_text.h"

#include "tools/report/output/live_rules.h"

#include "sink/process_metrics.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "tests/support/live_pair.h"
#include "tools/report/format.h"
#include "tests/support/run_model_builder.h"

namespace commtrace::report {
namespace {

// The live rules, fed and advanced together, as watch feeds them.
struct AllRules {
  std::vector<std::unique_ptr<LiveRule>> rules;
  void collective(const CollInstance& c, std::span<const MemberView> members) {
    for (const auto& rule : rules) rule->collective(c, members);
  }
  void observe(const RecordBatch& batch) {
    for (const auto& rule : rules) rule->observe(batch);
  }
  void advance(uint64_t watermark_utc_ns, uint64_t now_utc_ns = 0) {
    for (const auto& rule : rules) rule->advance(watermark_utc_ns, now_utc_ns);
  }
  std::string text() const {
    std::ostringstream out;
    writePrometheusText(rules, out);
    return out.str();
  }
};

// Two ranks on a communicator whose name needs escaping, rank 1 always 5 ms late: 10 s.
std::string metricsText(bool straggler) {
  testutil::RunModelBuilder b({"node\"a", "node\\b"});
  const uint32_t comm = b.comm({0, 1}, "dp\n0");
  AllRules live{makeLiveRules(b.run, {}, [](const AlertRow&) {})};
  testutil::feedLatePair(b.run, comm, live, 200, [&](uint64_t step) -> uint64_t {
    return straggler ? 5'000'000 : (step % 2 == 0 ? 100'000 : 0);  // else last every other step, by a hair
  });
  live.observe({.process = 1, .dropped_records = 7});
  return live.text();
}

TEST(PrometheusText, EscapesLabelValuesAndCarriesTheStragglerWhileItStraggles) {
  const std::string text = metricsText(true);
  EXPECT_NE(text.find(R"(commtrace_straggler{rank="1",host="node\\b",comm="dp\n0",comm_id=")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(commtrace_last_arrivals_total{rank="1",host="node\\b"} 200)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(commtrace_collectives_total{comm="dp\n0")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(func="AllReduce",size="1MiB-16MiB",algo=")"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(commtrace_dropped_records_total{rank="1",host="node\\b"} 7)"), std::string::npos) << text;
  const std::string quiet = metricsText(false);
  EXPECT_EQ(quiet.find("commtrace_straggler{"), std::string::npos) << quiet;
  EXPECT_NE(quiet.find("# TYPE commtrace_straggler gauge"), std::string::npos) << "the family is declared even without series";
}

// A communicator of two whose rank 0 waits in AllReduce #9 from t0 on, as the collector
// sees it at t0 + waited.
std::string hangText(uint64_t waited_ns, uint64_t* comm_id = nullptr) {
  testutil::RunModelBuilder b({"node0", "node0"});
  const uint32_t comm = b.comm({0, 1}, "dp.0");
  AllRules live{makeLiveRules(b.run, {}, [](const AlertRow&) {})};
  const uint64_t id = b.run.comms[comm].id, t0 = 1'760'000'000'000'000'000;
  if (comm_id != nullptr) *comm_id = id;
  for (int p = 0; p < 2; ++p) {
    RecordBatch batch{.process = p, .heartbeat_utc_ns = t0};
    batch.comm_infos.push_back({id, b.run.names.intern("dp.0"), 2, p, p, 1});
    if (p == 0) batch.in_flight.push_back({id, 9, 9, t0, t0, b.run.names.intern("AllReduce"), -1, 1});
    live.observe(batch);
  }
  live.advance(0, t0 + waited_ns);
  return live.text();
}

// The collector's text (with a straggler and a hang) and the processes' own textfiles
// (sink/process_metrics.h): every metric a panel queries is written, and every label its
// legend names is one of that metric's (or one its query groups by).
TEST(PrometheusText, TheDashboardQueriesOnlyMetricsAndLabelsTheTextCarries) {
  std::map<std::string, std::set<std::string>> labels;  // family -> the labels of its series
  ProcessMetrics process(StringTable::global(), 0);
  RecordSlot in_flight{};
  in_flight.kind = RecordKind::kInFlight;
  in_flight.payload.in_flight = {0xD0, 9, 9, 1'000'000'000, 3'000'000'000, StringTable::global().intern("AllReduce"), -1, 1};
  process.add(in_flight);
  std::istringstream text(metricsText(true) + hangText(7'500'000'000) + process.text(5'000'000'000));
  const std::regex label("([a-z_]+)=\"");
  for (std::string line; std::getline(text, line);) {
    if (line.rfind("# TYPE ", 0) == 0) labels[line.substr(7, line.find(' ', 7) - 7)];
    const size_t brace = line.find('{');
    if (line.empty() || line[0] == '#' || brace == std::string::npos) continue;
    const std::string series = line.substr(brace, line.rfind('}') - brace);
    for (std::sregex_iterator m(series.begin(), series.end(), label), end; m != end; ++m) labels[line.substr(0, brace)].insert((*m)[1]);
  }
  std::ifstream in(GRAFANA_DASHBOARD);
  ASSERT_TRUE(in) << GRAFANA_DASHBOARD;
  const nlohmann::json dashboard = nlohmann::json::parse(in);
  size_t queries = 0;
  const std::regex metric("commtrace_[a-z_]+"), by("by *\\(([^)]*)\\)"), legend("\\{\\{ *([a-z_]+) *\\}\\}"), word("[a-z_]+");
  for (const nlohmann::json& panel : dashboard["panels"]) {
    for (const nlohmann::json& target : panel["targets"]) {
      const std::string expr = target["expr"];
      ++queries;
      std::set<std::string> allowed;
      for (std::sregex_iterator m(expr.begin(), expr.end(), metric), end; m != end; ++m) {
        EXPECT_TRUE(labels.count(m->str())) << panel["title"] << ": " << m->str() << " is not a metric commtrace writes";
        if (labels.count(m->str())) allowed.insert(labels[m->str()].begin(), labels[m->str()].end());
      }
      for (std::sregex_iterator m(expr.begin(), expr.end(), by), end; m != end; ++m) {
        const std::string names = (*m)[1];
        for (std::sregex_iterator w(names.begin(), names.end(), word); w != end; ++w) allowed.insert(w->str());
      }
      const std::string format = target.value("legendFormat", "");
      for (std::sregex_iterator m(format.begin(), format.end(), legend), end; m != end; ++m)
        EXPECT_TRUE(allowed.count((*m)[1])) << panel["title"] << ": the legend names " << (*m)[1] << ", which its series do not have";
    }
  }
  EXPECT_GE(queries, 5u);
}

// A hung communicator has a series while it hangs, its value the seconds waited so far.
TEST(PrometheusText, AHangHasASeriesWhileItLasts) {
  EXPECT_EQ(hangText(2'000'000'000).find("commtrace_hang_seconds{"), std::string::npos) << "2 s of waiting is no hang yet";
  uint64_t comm_id = 0;
  const std::string text = hangText(7'500'000'000, &comm_id);
  EXPECT_NE(text.find(R"(commtrace_hang_seconds{comm="dp.0",comm_id=")" + fmt::hexId(comm_id) + R"(",func="AllReduce"} 7.5)"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace commtrace::report
