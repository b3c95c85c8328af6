#include "tools/report/output/live_rules.h"

#include "tools/report/evidence_words.h"
#include "tools/report/format.h"
#include "tools/report/output/prometheus_text.h"

namespace commtrace::report {

nlohmann::json AlertRow::json(uint64_t raised_utc_ns) const {
  nlohmann::json j = fields;
  j["kind"] = kind;
  j["of"] = of;
  j["raised_utc_ns"] = raised_utc_ns;
  j["line"] = line;
  return j;
}

namespace {

const ProcessInfo* processOf(const RunModel& run, int32_t process) {
  return process >= 0 && static_cast<size_t>(process) < run.processes.size() ? &run.processes[static_cast<size_t>(process)] : nullptr;
}

// An alert's rank and host, and its own fields.
nlohmann::json rankFields(const RunModel& run, int32_t process, const nlohmann::json& fields) {
  const ProcessInfo* p = processOf(run, process);
  nlohmann::json out = {{"rank", p != nullptr ? p->rank : -1}, {"host", p != nullptr ? p->host : ""}};
  out.update(fields);
  return out;
}

// A rank last far more often than chance whose lateness costs the others (live_stragglers.h).
class StragglerRule : public LiveRule {
 public:
  StragglerRule(const RunModel& run, const LiveStragglers::Options& options, OnAlertRow on_alert)
      : run_(run), live_(run, options, [this, on_alert](const LiveAlert& a) { on_alert(row(a)); }) {}

  void collective(const CollInstance& instance, std::span<const MemberView> members) override { live_.collective(instance, members); }
  void transfer(const P2pTransfer& transfer) override { live_.transfer(transfer); }
  void finish(std::span<const uint32_t> new_index) override { live_.finish(new_index); }
  void advance(uint64_t watermark_utc_ns, uint64_t) override { live_.advance(watermark_utc_ns); }
  void end() override { live_.advance(UINT64_MAX); }  // its last windows are whole

  void writeMetrics(std::ostream& out) const override {
    const LiveTotals& t = live_.totals();
    prom::family(out, "commtrace_collectives_total", "counter",
                 "Collective instances joined, per communicator, func, size class (bytes per rank), algorithm and protocol.");
    for (const auto& [key, f] : t.by_op_class) out << "commtrace_collectives_total{" << prom::opClassLabels(run_, key) << "} " << f.instances << '\n';
    prom::family(out, "commtrace_busbw_gbps", "gauge",
                 "nccl-tests bus bandwidth so far: the timed instances' bus bytes over their transfer times, GB/s.");
    for (const auto& [key, f] : t.by_op_class)
      if (f.transfer_ns != 0)
        out << "commtrace_busbw_gbps{" << prom::opClassLabels(run_, key) << "} " << f.bus_bytes / static_cast<double>(f.transfer_ns) << '\n';
    prom::family(out, "commtrace_last_arrivals_total", "counter", "Collective instances the rank arrived last at (a tie shared).");
    for (const auto& [process, r] : t.by_process) out << "commtrace_last_arrivals_total{" << prom::rankLabels(run_, process) << "} " << r.last_arrivals << '\n';
    prom::family(out, "commtrace_wait_caused_seconds_total", "counter",
                 "The other members' waiting the rank's own delays caused (root-cause attribution: waits passed on count for the rank that created the delay).");
    for (const auto& [process, r] : t.by_process)
      out << "commtrace_wait_caused_seconds_total{" << prom::rankLabels(run_, process) << "} " << static_cast<double>(r.wait_caused_ns) / 1e9 << '\n';
    const auto straggling = live_.straggling();
    prom::family(out, "commtrace_straggler", "gauge", "1 while the rank is judged a straggler on the communicator (series only for those).");
    for (const auto& [seat, a] : straggling)
      if (a.process >= 0) out << "commtrace_straggler{" << prom::rankLabels(run_, a.process) << "," << prom::commLabels(run_, a.comm, a.func) << "} 1\n";
    prom::family(out, "commtrace_straggler_score", "gauge", "The share of the other members' time a straggler cost them in its latest straggling window.");
    for (const auto& [seat, a] : straggling)
      if (a.process >= 0)
        out << "commtrace_straggler_score{" << prom::rankLabels(run_, a.process) << "," << prom::commLabels(run_, a.comm, a.func) << "} " << a.effect << '\n';
  }

 private:
  AlertRow row(const LiveAlert& a) const {
    const Communicator& comm = run_.comms[a.comm];
    return {a.kind == LiveAlert::Kind::kStraggler ? "STRAGGLER" : "RECOVERED",
            "STRAGGLER",
            rankFields(run_, a.process,
                       {{"comm", fmt::hexId(comm.id)},
             {"comm_name", std::string(run_.name(comm.name))},
             {"func", std::string(run_.name(a.func))},
             {"since_utc_ns", a.since_utc_ns},
             {"late_share", a.late_share},
             {"lateness_us", a.lateness_us},
             {"effect", a.effect},
             {"confidence", a.confidence},
             {"class", a.cls},
             {"class_certainty", a.class_certainty},
             {"gap_excess_us", a.gap_excess_us},
             {"class_words", liveClassWords(a)}}),
            alertLine(run_, a)};
  }

  const RunModel& run_;
  LiveStragglers live_;
};

// Records lost before the trace file, while they rise (live_drops.h).
class DropRule : public LiveRule {
 public:
  DropRule(const RunModel& run, const LiveDrops::Options& options, OnAlertRow on_alert)
      : run_(run), drops_(options, [this, on_alert](const DropAlert& a) { on_alert(row(a)); }) {}

  void observe(const RecordBatch& batch) override { drops_.observe(batch); }
  void advance(uint64_t, uint64_t) override { drops_.judge(); }
  void end() override { drops_.judge(); }

  void writeMetrics(std::ostream& out) const override {
    prom::family(out, "commtrace_dropped_records_total", "counter",
                 "The rank's records lost before its trace file (its rings full, or its file unwritable), so far.");
    for (const auto& [process, dropped] : drops_.lostSoFar())
      out << "commtrace_dropped_records_total{" << prom::rankLabels(run_, process) << "} " << dropped << '\n';
  }

 private:
  AlertRow row(const DropAlert& a) const {
    return {a.kind == DropAlert::Kind::kDrops ? "DROPS" : "RECOVERED", "DROPS",
            rankFields(run_, a.process, {{"since_utc_ns", a.since_utc_ns}, {"lost", a.lost}, {"lost_total", a.lost_total}}),
            dropLine(run_, a)};
  }

  const RunModel& run_;
  LiveDrops drops_;
};

// A communicator a member has waited in for hang_after (live_hangs.h).
class HangRule : public LiveRule {
 public:
  HangRule(const RunModel& run, const LiveHangs::Options& options, OnAlertRow on_alert)
      : run_(run), hangs_(run, options, [this, on_alert](const HangAlert& a) { on_alert(row(a)); }) {}

  void observe(const RecordBatch& batch) override { hangs_.observe(batch); }
  void advance(uint64_t, uint64_t now_utc_ns) override { hangs_.advance(now_utc_ns); }

  void writeMetrics(std::ostream& out) const override {
    prom::family(out, "commtrace_hang_seconds", "gauge",
                 "How long the communicator's members have waited in an op some member has not joined (series only while it hangs).");
    for (const HangAlert& h : hangs_.hanging())
      out << "commtrace_hang_seconds{" << prom::commLabels(run_.name(h.comm_name), h.comm_id, run_.name(h.op.func)) << "} " << h.waited_s << '\n';
  }

 private:
  nlohmann::json membersJson(const std::vector<HangAlert::Member>& members) const {
    nlohmann::json out = nlohmann::json::array();
    for (const HangAlert::Member& m : members) {
      const ProcessInfo* p = processOf(run_, m.process);
      nlohmann::json j = {{"rank", p != nullptr ? p->rank : -1}, {"comm_rank", m.comm_rank}, {"stuck", m.stuck}, {"silent_s", m.silent_s}};
      if (m.last) j["last_op"] = hungOpWords(run_, *m.last);
      out.push_back(std::move(j));
    }
    return out;
  }
  AlertRow row(const HangAlert& a) const {
    return {a.kind == HangAlert::Kind::kHang ? "HANG" : "RECOVERED",
            "HANG",
            {{"comm", fmt::hexId(a.comm_id)},
             {"comm_name", std::string(run_.name(a.comm_name))},
             {"func", std::string(run_.name(a.op.func))},
             {"op", hungOpWords(run_, a.op)},
             {"seq", a.op.seq},
             {"op_index", a.op.op_index},
             {"since_utc_ns", a.since_utc_ns},
             {"waited_s", a.waited_s},
             {"waiting", membersJson(a.waiting)},
             {"others", membersJson(a.others)}},
            hangLine(run_, a)};
  }

  const RunModel& run_;
  LiveHangs hangs_;
};

}  // namespace

std::vector<std::unique_ptr<LiveRule>> makeLiveRules(const RunModel& run, const LiveRuleOptions& options, OnAlertRow on_alert) {
  std::vector<std::unique_ptr<LiveRule>> rules;
  rules.push_back(std::make_unique<StragglerRule>(run, options.stragglers, on_alert));
  rules.push_back(std::make_unique<DropRule>(run, options.drops, on_alert));
  rules.push_back(std::make_unique<HangRule>(run, options.hangs, on_alert));
  return rules;
}

}  // namespace commtrace::report
