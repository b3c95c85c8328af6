// The live rules as watch and collect run them: each rule's alert line carries exactly the
// fields it declares (and the common ones), as SCHEMA.md documents them (report_rows_test
// holds the tables equal), and a rule raises nothing on a quiet stream.
#include "tools/report/output/live_rules.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/support/live_pair.h"
#include "tests/support/run_model_builder.h"

namespace commtrace::report {
namespace {

// The rules fed together; what each raised, by the rule that raised it.
struct Rules {
  std::vector<std::unique_ptr<LiveRule>> all;
  std::vector<AlertRow> raised;
  void collective(const CollInstance& c, std::span<const MemberView> members) {
    for (const auto& rule : all) rule->collective(c, members);
  }
  void observe(const RecordBatch& batch) {
    for (const auto& rule : all) rule->observe(batch);
  }
  void advance(uint64_t watermark_utc_ns, uint64_t now_utc_ns = 0) {
    for (const auto& rule : all) rule->advance(watermark_utc_ns, now_utc_ns);
  }
};

std::set<std::string> keysOf(const nlohmann::json& j) {
  std::set<std::string> out;
  for (const auto& [key, value] : j.items()) out.insert(key);
  return out;
}

std::set<std::string> declaredKeys(const LiveRule& rule) {
  std::set<std::string> out;
  for (const AlertFieldDoc& f : commonAlertFields()) out.emplace(f.key);
  for (const AlertFieldDoc& f : rule.alertFields()) out.emplace(f.key);
  return out;
}

// A pair whose rank 1 is 5 ms late at every step, rank 1's rings overflowing once, and rank
// 0 waiting 7.5 s in AllReduce #9 on another communicator: every rule raises its alert.
TEST(LiveRules, EachAlertLineCarriesTheFieldsItsRuleDeclares) {
  testutil::RunModelBuilder b({"node0", "node1"});
  const uint32_t comm = b.comm({0, 1}, "dp.0");
  const uint32_t stuck = b.comm({0, 1}, "tp.0");
  Rules rules;
  rules.all = makeLiveRules(b.run, {}, [&](const AlertRow& a) { rules.raised.push_back(a); });
  testutil::feedLatePair(b.run, comm, rules, 200, [](uint64_t) -> uint64_t { return 5'000'000; });
  const uint64_t t0 = testutil::kPairT0 + 200 * testutil::kPairStepNs, id = b.run.comms[stuck].id;
  for (int p = 0; p < 2; ++p) {
    RecordBatch batch{.process = p, .position_ns = t0, .heartbeat_utc_ns = t0, .dropped_records = p == 1 ? 64u : 0u};
    batch.comm_infos.push_back({id, b.run.names.intern("tp.0"), 2, p, p, 1});
    if (p == 0) batch.in_flight.push_back({id, 9, 9, t0, t0, b.run.names.intern("AllReduce"), -1, 1});
    rules.observe(batch);
  }
  rules.advance(t0, t0 + 7'500'000'000);
  std::map<std::string, const AlertRow*> by_rule;
  for (const AlertRow& a : rules.raised) by_rule.emplace(a.of, &a);
  ASSERT_EQ(by_rule.size(), rules.all.size()) << "one alert of each rule";
  for (const auto& rule : rules.all) {
    const AlertRow& alert = *by_rule.at(std::string(rule->name()));
    EXPECT_EQ(alert.kind, rule->name());
    const nlohmann::json line = alert.json(t0);
    EXPECT_EQ(keysOf(line), declaredKeys(*rule)) << rule->name() << ": " << line.dump();
    EXPECT_EQ(line["line"], alert.line);
    EXPECT_NE(alert.line.find("commtrace: " + std::string(rule->name())), std::string::npos) << alert.line;
  }
}

TEST(LiveRules, AQuietStreamRaisesNothing) {
  testutil::RunModelBuilder b({"node0", "node1"});
  const uint32_t comm = b.comm({0, 1}, "dp.0");
  Rules rules;
  rules.all = makeLiveRules(b.run, {}, [&](const AlertRow& a) { rules.raised.push_back(a); });
  testutil::feedLatePair(b.run, comm, rules, 200, [](uint64_t step) -> uint64_t { return step % 2 == 0 ? 100'000 : 0; });
  for (int p = 0; p < 2; ++p) rules.observe({.process = p, .position_ns = testutil::kPairT0, .heartbeat_utc_ns = testutil::kPairT0});
  rules.advance(UINT64_MAX, testutil::kPairT0 + 60'000'000'000);
  for (const auto& rule : rules.all) rule->end();
  EXPECT_TRUE(rules.raised.empty()) << rules.raised.front().line;
}

}  // namespace
}  // namespace commtrace::report
