// The live rules that `watch` and `collect` run, behind one interface: each takes the joined
// ops or the batches read (or both), is advanced after every look, raises its alerts as rows
// (the line for the job's log and the JSON line of alerts.jsonl made from one place), and
// writes its Prometheus series. Adding a rule is a class here and a line in makeLiveRules().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "tools/report/analyses/live_drops.h"
#include "tools/report/analyses/live_hangs.h"
#include "tools/report/analyses/live_stragglers.h"
#include "tools/report/load/op_joiner.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

// One alert: `kind` ("STRAGGLER", "HANG", "DROPS", or "RECOVERED") of the rule `of`, its
// fields, and its line.
struct AlertRow {
  std::string kind, of;
  nlohmann::json fields;
  std::string line;
  // The alerts.jsonl line's object: the fields with kind, of, line and when it was raised.
  nlohmann::json json(uint64_t raised_utc_ns) const;
};
using OnAlertRow = std::function<void(const AlertRow&)>;

// A field of an alert's JSON line as SCHEMA.md documents it ("alerts.jsonl").
struct AlertFieldDoc {
  std::string_view key, type, meaning;
};
// The fields every alert line has.
std::span<const AlertFieldDoc> commonAlertFields();

class LiveRule : public JoinedOpSink {
 public:
  // The joined ops: only a rule that judges them overrides these.
  void collective(const CollInstance&, std::span<const MemberView>) override {}
  void transfer(const P2pTransfer&) override {}
  // Every batch a file gives, as it is read.
  virtual void observe(const RecordBatch&) {}
  // After a look: every file has been read up to watermark_utc_ns; the watcher's clock reads now_utc_ns.
  virtual void advance(uint64_t watermark_utc_ns, uint64_t now_utc_ns) = 0;
  // The job ended: every file was read whole.
  virtual void end() {}
  // Its metric families, each declared even without series.
  virtual void writeMetrics(std::ostream& out) const = 0;
  // What its alerts say: "STRAGGLER", and the fields of their lines beside the common ones.
  virtual std::string_view name() const = 0;
  virtual std::vector<AlertFieldDoc> alertFields() const = 0;

 protected:
  // Its alert (kind: its name) or the recovery that ends one.
  AlertRow alertRow(bool recovered, nlohmann::json fields, std::string line) const;
};

struct LiveRuleOptions {
  LiveStragglers::Options stragglers;
  LiveHangs::Options hangs;
  LiveDrops::Options drops;
};

// The rules, in the order their series are written.
std::vector<std::unique_ptr<LiveRule>> makeLiveRules(const RunModel& run, const LiveRuleOptions& options, OnAlertRow on_alert);

}  // namespace commtrace::report
