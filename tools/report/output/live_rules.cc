#include "tools/report/output/live_rules.h"

#include "tools/report/evidence_words.h"
#include "tools/report/format.h"
#include "tools/report/output/prometheus_text.h"

namespace commtrace::report {

std::span<const AlertFieldDoc> commonAlertFields() {
  static constexpr AlertFieldDoc kCommon[] = {
      {"kind", "string", "the rule's word (`STRAGGLER`, `HANG`, `DROPS`), or `RECOVERED` when what it named has ended"},
      {"of", "string", "the rule: what a `RECOVERED` ends"},
      {"raised_utc_ns", "integer", "when the watcher raised it (its CLOCK_REALTIME, ns since 1970)"},
      {"line", "string", "the line printed into the job's log"}};
  return kCommon;
}

AlertRow LiveRule::alertRow(bool recovered, nlohmann::json fields, std::string line) const {
  return {recovered ? "RECOVERED" : std::string(name()), std::string(name()), std::move(fields), std::move(line)};
}

nlohmann::json AlertRow::json(uint64_t raised_utc_ns) const {
  nlohmann::json j = fields;
  j["kind"] = kind;
  j["of"] = of;
  j["raised_utc_ns"] = raised_utc_ns;
  j["line"] = line;
  return j;
}

namespace {

// A field of a rule's alert line: as documented, and its value.
template <class Alert>
struct AlertField {
  AlertFieldDoc doc;
  nlohmann::json (*value)(const RunModel& run, const Alert& a);
};

template <class Alert>
nlohmann::json fieldsOf(const std::vector<AlertField<Alert>>& fields, const RunModel& run, const Alert& a) {
  nlohmann::json out = nlohmann::json::object();
  for (const AlertField<Alert>& f : fields) out[std::string(f.doc.key)] = f.value(run, a);
  return out;
}

template <class Alert>
std::vector<AlertFieldDoc> docsOf(const std::vector<AlertField<Alert>>& fields) {
  std::vector<AlertFieldDoc> out;
  for (const AlertField<Alert>& f : fields) out.push_back(f.doc);
  return out;
}

// The rank and host of an alert about one process.
template <class Alert>
std::vector<AlertField<Alert>> rankAnd(std::vector<AlertField<Alert>> fields) {
  fields.insert(fields.begin(), {{{"rank", "integer", "the global rank (-1: not known)"},
                                  [](const RunModel& run, const Alert& a) -> nlohmann::json {
                                    const ProcessInfo* p = run.processAt(a.process);
                                    return p != nullptr ? p->rank : -1;
                                  }},
                                 {{"host", "string", "its host"}, [](const RunModel& run, const Alert& a) -> nlohmann::json {
                                    const ProcessInfo* p = run.processAt(a.process);
                                    return p != nullptr ? p->host : "";
                                  }}});
  return fields;
}

// A rank last far more often than chance whose lateness costs the others (live_stragglers.h).
class StragglerRule : public LiveRule {
 public:
  StragglerRule(const RunModel& run, const LiveStragglers::Options& options, OnAlertRow on_alert)
      : run_(run), live_(run, options, [this, on_alert](const LiveAlert& a) { on_alert(row(a)); }) {}

  void collective(const CollInstance& instance, std::span<const MemberView> members) override { live_.collective(instance, members); }
  void transfer(const P2pTransfer& transfer) override { live_.transfer(transfer); }
  void finish() override { live_.finish(); }
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

  std::string_view name() const override { return "STRAGGLER"; }
  std::vector<AlertFieldDoc> alertFields() const override { return docsOf(fields()); }

 private:
  static const std::vector<AlertField<LiveAlert>>& fields() {
    using F = AlertField<LiveAlert>;
    using J = nlohmann::json;
    static const std::vector<F> kFields = rankAnd<LiveAlert>({
        F{{"comm", "string", "the communicator's hex id"}, [](const RunModel& run, const LiveAlert& a) -> J { return fmt::hexId(run.comms[a.comm].id); }},
        F{{"comm_name", "string", "its NCCL commName, `\"\"` when none"},
          [](const RunModel& run, const LiveAlert& a) -> J { return std::string(run.name(run.comms[a.comm].name)); }},
        F{{"func", "string", "the communicator's most frequent op in the deciding window"},
          [](const RunModel& run, const LiveAlert& a) -> J { return std::string(run.name(a.func)); }},
        F{{"since_utc_ns", "integer", "the start of the first window it was judged late in (`RECOVERED`: of the first without)"},
          [](const RunModel&, const LiveAlert& a) -> J { return a.since_utc_ns; }},
        F{{"late_share", "number", "0..1: of the communicator's instances in the deciding window, where it was last"},
          [](const RunModel&, const LiveAlert& a) -> J { return a.late_share; }},
        F{{"lateness_us", "number", "its mean lateness where it was last: after the first arriver"},
          [](const RunModel&, const LiveAlert& a) -> J { return a.lateness_us; }},
        F{{"effect", "number", "0..1: the waiting it caused over the other members' time"},
          [](const RunModel&, const LiveAlert& a) -> J { return a.effect; }},
        F{{"confidence", "number", "0..1, as the report's straggler confidence"}, [](const RunModel&, const LiveAlert& a) -> J { return a.confidence; }},
        F{{"class", "string", "why it was late: `compute`, `network`, `unknown`"}, [](const RunModel&, const LiveAlert& a) -> J { return a.cls; }},
        F{{"class_certainty", "number", "0..1"}, [](const RunModel&, const LiveAlert& a) -> J { return a.class_certainty; }},
        F{{"gap_excess_us", "number", "its mean GPU gap before the ops it was last at, over its peers' median gap"},
          [](const RunModel&, const LiveAlert& a) -> J { return a.gap_excess_us; }},
        F{{"class_words", "string", "the class in words, as the line has it"}, [](const RunModel&, const LiveAlert& a) -> J { return liveClassWords(a); }},
    });
    return kFields;
  }
  AlertRow row(const LiveAlert& a) const {
    return alertRow(a.kind == LiveAlert::Kind::kRecovered, fieldsOf(fields(), run_, a), alertLine(run_, a));
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

  std::string_view name() const override { return "DROPS"; }
  std::vector<AlertFieldDoc> alertFields() const override { return docsOf(fields()); }

 private:
  static const std::vector<AlertField<DropAlert>>& fields() {
    using F = AlertField<DropAlert>;
    using J = nlohmann::json;
    static const std::vector<F> kFields = rankAnd<DropAlert>({
        F{{"since_utc_ns", "integer", "the chunk that first showed this stretch's losses (`RECOVERED`: the last that did), its file's time"},
          [](const RunModel&, const DropAlert& a) -> J { return a.since_utc_ns; }},
        F{{"lost", "integer", "records lost in this stretch, as far as seen"}, [](const RunModel&, const DropAlert& a) -> J { return a.lost; }},
        F{{"lost_total", "integer", "records lost since the process started"}, [](const RunModel&, const DropAlert& a) -> J { return a.lost_total; }},
    });
    return kFields;
  }
  AlertRow row(const DropAlert& a) const {
    return alertRow(a.kind == DropAlert::Kind::kRecovered, fieldsOf(fields(), run_, a), dropLine(run_, a));
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

  std::string_view name() const override { return "HANG"; }
  std::vector<AlertFieldDoc> alertFields() const override { return docsOf(fields()); }

 private:
  static nlohmann::json membersJson(const RunModel& run, const std::vector<HangAlert::Member>& members) {
    nlohmann::json out = nlohmann::json::array();
    for (const HangAlert::Member& m : members) {
      const ProcessInfo* p = run.processAt(m.process);
      nlohmann::json j = {{"rank", p != nullptr ? p->rank : -1}, {"comm_rank", m.comm_rank}, {"stuck", m.stuck}, {"silent_s", m.silent_s}};
      if (m.last) j["last_op"] = hungOpWords(run, *m.last);
      out.push_back(std::move(j));
    }
    return out;
  }
  static const std::vector<AlertField<HangAlert>>& fields() {
    using F = AlertField<HangAlert>;
    using J = nlohmann::json;
    static const std::vector<F> kFields = {
        F{{"comm", "string", "the communicator's hex id"}, [](const RunModel&, const HangAlert& a) -> J { return fmt::hexId(a.comm_id); }},
        F{{"comm_name", "string", "its NCCL commName, `\"\"` when none"},
          [](const RunModel& run, const HangAlert& a) -> J { return std::string(run.name(a.comm_name)); }},
        F{{"func", "string", "the op's func"}, [](const RunModel& run, const HangAlert& a) -> J { return std::string(run.name(a.op.func)); }},
        F{{"op", "string", "the op in words: `AllReduce #4812`, `Send #12 to 3`"}, [](const RunModel& run, const HangAlert& a) -> J { return hungOpWords(run, a.op); }},
        F{{"seq", "integer", "a collective's NCCL seqNumber"}, [](const RunModel&, const HangAlert& a) -> J { return a.op.seq; }},
        F{{"op_index", "integer", "a send's or receive's index among those to its peer"}, [](const RunModel&, const HangAlert& a) -> J { return a.op.op_index; }},
        F{{"since_utc_ns", "integer", "when the first waiting member started the op"}, [](const RunModel&, const HangAlert& a) -> J { return a.since_utc_ns; }},
        F{{"waited_s", "number", "since then, until the alert (`RECOVERED`: until it was seen to end)"},
          [](const RunModel&, const HangAlert& a) -> J { return a.waited_s; }},
        F{{"waiting", "[object]", "the members waiting in it: `rank`, `comm_rank`, `stuck`, `silent_s` (since its file last grew), `last_op`"},
          [](const RunModel& run, const HangAlert& a) -> J { return membersJson(run, a.waiting); }},
        F{{"others", "[object]", "the members not waiting in it, likewise, `last_op` where each was last seen"},
          [](const RunModel& run, const HangAlert& a) -> J { return membersJson(run, a.others); }},
    };
    return kFields;
  }
  AlertRow row(const HangAlert& a) const {
    return alertRow(a.kind == HangAlert::Kind::kRecovered, fieldsOf(fields(), run_, a), hangLine(run_, a));
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
