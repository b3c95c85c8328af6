// The live metrics' text: label values escaped as the exposition format wants, a straggler's
// series present while it straggles, and every metric the Grafana dashboard in the repository
// queries one the text carries.
#include "tools/report/output/prometheus_text.h"

#include "sink/process_metrics.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "tests/support/live_pair.h"
#include "tools/report/format.h"
#include "tests/support/run_model_builder.h"

namespace commtrace::report {
namespace {

// Two ranks on a communicator whose name needs escaping, rank 1 always 5 ms late: 10 s.
std::string metricsText(bool straggler) {
  testutil::RunModelBuilder b({"node\"a", "node\\b"});
  const uint32_t comm = b.comm({0, 1}, "dp\n0");
  LiveStragglers live(b.run, {}, [](const LiveAlert&) {});
  const LiveHangs hangs(b.run, {}, [](const HangAlert&) {});
  testutil::feedLatePair(b.run, comm, live, 200, [&](uint64_t step) -> uint64_t {
    return straggler ? 5'000'000 : (step % 2 == 0 ? 100'000 : 0);  // else last every other step, by a hair
  });
  std::ostringstream out;
  const std::map<int32_t, uint64_t> dropped{{1, 7}};
  writePrometheusText(b.run, {live, hangs, dropped}, out);
  return out.str();
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

// The collector's text and the processes' own textfiles (sink/process_metrics.h).
TEST(PrometheusText, TheDashboardQueriesOnlyMetricsTheTextCarries) {
  std::set<std::string> families;
  std::istringstream text(metricsText(true) + ProcessMetrics(StringTable::global(), 0).text(0));
  for (std::string line; std::getline(text, line);)
    if (line.rfind("# TYPE ", 0) == 0) families.insert(line.substr(7, line.find(' ', 7) - 7));
  std::ifstream in(GRAFANA_DASHBOARD);
  ASSERT_TRUE(in) << GRAFANA_DASHBOARD;
  const nlohmann::json dashboard = nlohmann::json::parse(in);
  size_t queries = 0;
  const std::regex metric("commtrace_[a-z_]+");
  for (const nlohmann::json& panel : dashboard["panels"]) {
    for (const nlohmann::json& target : panel["targets"]) {
      const std::string expr = target["expr"];
      ++queries;
      for (std::sregex_iterator m(expr.begin(), expr.end(), metric), end; m != end; ++m)
        EXPECT_TRUE(families.count(m->str())) << panel["title"] << ": " << m->str() << " is not a metric commtrace writes";
    }
  }
  EXPECT_GE(queries, 5u);
}

// A hung communicator has a series while it hangs, its value the seconds waited so far.
TEST(PrometheusText, AHangHasASeriesWhileItLasts) {
  testutil::RunModelBuilder b({"node0", "node0"});
  const uint32_t comm = b.comm({0, 1}, "dp.0");
  const LiveStragglers live(b.run, {}, [](const LiveAlert&) {});
  LiveHangs hangs(b.run, {}, [](const HangAlert&) {});
  const uint64_t comm_id = b.run.comms[comm].id, t0 = 1'760'000'000'000'000'000;
  for (int p = 0; p < 2; ++p) {
    RecordBatch batch{.process = p, .heartbeat_utc_ns = t0};
    batch.comm_infos.push_back({comm_id, b.run.names.intern("dp.0"), 2, p, p, 1});
    if (p == 0) batch.in_flight.push_back({comm_id, 9, 9, t0, t0, b.run.names.intern("AllReduce"), -1, 1});
    hangs.observe(batch);
  }
  const auto text = [&] {
    std::ostringstream out;
    const std::map<int32_t, uint64_t> none;
    writePrometheusText(b.run, {live, hangs, none}, out);
    return out.str();
  };
  hangs.advance(t0 + 2'000'000'000);
  EXPECT_EQ(text().find("commtrace_hang_seconds{"), std::string::npos) << "2 s of waiting is no hang yet";
  hangs.advance(t0 + 7'500'000'000);
  EXPECT_NE(text().find(R"(commtrace_hang_seconds{comm="dp.0",comm_id=")" + fmt::hexId(comm_id) + R"(",func="AllReduce"} 7.5)"),
            std::string::npos)
      << text();
}

}  // namespace
}  // namespace commtrace::report
