#include "tools/report/output/report_rows.h"

#include <cmath>

#include "tools/report/analyses/call_stacks.h"
#include "tools/report/analyses/findings.h"
#include "tools/report/evidence_words.h"
#include "tools/report/format.h"
#include "tools/report/output/report_tables.h"

namespace commtrace::report::rows {
namespace {

using enum Kind;
using enum Presence;

// Ids are 64-bit hashes: a hex string survives every JSON parser (doubles do not); 0 is none.
Value commId(uint64_t id) { return id == 0 ? Value() : Value(fmt::hexId(id)); }
Value orNull(bool known, double v) { return known ? Value(v) : Value(); }
Value textOrNull(const std::string& s) { return s.empty() ? Value() : Value(s); }
// A figure that may be NaN (not measured) as null.
template <class Row>
std::function<Value(const Row&)> finite(double Row::*m) {
  return [m](const Row& r) { return orNull(std::isfinite(r.*m), r.*m); };
}

// The communicator columns of a row with comm and comm_name: people see the name, else the id.
template <class Row>
void addComm(Fields<Row>& fields) {
  fields.push_back({"comm", kString, kOrNull, "the communicator's hex id", [](const Row& r) { return commId(r.comm); }, "comm",
                    [](const Row& r) { return fmt::commLabel(r.comm, r.comm_name); }});
  fields.push_back({"comm_name", kString, kAlways, "its NCCL commName, `\"\"` when none", member(&Row::comm_name)});
}

// The row's percentiles are approximate (a sketch's): people see "~" in front of them.
void markApproximate(Field<BandwidthRow>& f) {
  f.shown = [key = f.key, get = f.value](const BandwidthRow& b) {
    const Value v = get(b);
    const std::string cell = peopleCell(key, v);
    return b.percentile_error > 0 && !std::holds_alternative<std::monostate>(v) ? "~" + cell : cell;
  };
}

Fields<CudaSyncStats> cudaSyncStatsFields() {
  return {{"count", kInteger, kAlways, "calls", member(&CudaSyncStats::count), "calls"},
          {"failed", kInteger, kAlways, "calls that returned an error", member(&CudaSyncStats::failed), "failed"},
          {"total_us", kNumber, kAlways,
           "CPU time inside the calls. `cudaStreamWaitEvent` makes the stream wait, not the CPU: its time is the enqueue",
           member(&CudaSyncStats::total_us), "total"},
          {"p50_us", kNumber, kAlways, "the median call's CPU time: exact up to 4,096 distinct durations, within 1 % past that (tallied as the file is read)",
           member(&CudaSyncStats::p50_us), "p50"},
          {"max_us", kNumber, kAlways, "the longest call's", member(&CudaSyncStats::max_us), "max"}};
}

template <class Row>
Fields<Row> concat(Fields<Row> head, const Fields<Row>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

}  // namespace

const Fields<ClockFit>& clockFitFields() {
  using F = ClockFit;
  const auto ifAligned = [](double F::*m) { return [m](const F& f) { return orNull(f.aligned, f.*m); }; };
  static const Fields<F> fields{
      {"rank", kInteger, kAlways, "the process's global rank", member(&F::rank), "rank"},
      {"host", kString, kAlways, "its host", member(&F::host), "host"},
      {"aligned", kBool, kAlways, "a collective it shares reaches the reference rank (the lowest), so its times are on the aligned timeline",
       member(&F::aligned), "aligned"},
      {"offset_us", kNumber, kOrNull, "its GPU clock minus the reference's at the start of the run; null when not aligned", ifAligned(&F::offset_us),
       "offset"},
      {"drift_ppm", kNumber, kOrNull, "how much faster its GPU clock runs than the reference's; null when not aligned", ifAligned(&F::drift_ppm),
       "drift ppm", [](const F& f) { return !f.aligned ? "-" : f.drift_fitted ? fmt::fixed(f.drift_ppm, 2) : "not fitted"; }},
      {"residual_us", kNumber, kOrNull, "RMS of its anchors' residuals after the fit; null when not aligned", ifAligned(&F::residual_us), "residual"},
      {"anchors", kInteger, kAlways, "collective completions the fit used", member(&F::anchors), "anchors"},
      {"outliers", kInteger, kAlways, "completions left out of the fit: more than 5 MADs (and 2 us) off it", member(&F::outliers), "outliers"},
      {"drift_fitted", kBool, kAlways, "false when drift was held at 0 (the reference, or too short a span to tell drift from noise)",
       member(&F::drift_fitted)}};
  return fields;
}

const Fields<CommunicatorRow>& communicatorFields() {
  using C = CommunicatorRow;
  static const Fields<C> fields{
      {"id", kString, kAlways, "hex commId", [](const C& c) { return Value(fmt::hexId(c.id)); }, "id"},
      {"name", kString, kAlways, "NCCL's commName, `\"\"` when none", member(&C::name), "name"},
      {"size", kInteger, kAlways, "nranks", member(&C::size), "size"},
      {"ranks", kRankList, kAlways, "global rank of each comm rank, in comm-rank order; -1 unknown", member(&C::ranks), "ranks"},
      {"hosts", kInteger, kAlways, "hosts its ranks live on", member(&C::hosts), "hosts"},
      {"instances", kInteger, kAlways, "collective instances recorded on it", member(&C::instances), "instances"}};
  return fields;
}

const Fields<BandwidthRow>& bandwidthFields() {
  using B = BandwidthRow;
  static const Fields<B> fields = [] {
    Fields<B> f;
    addComm(f);
    const auto timed = [](double B::*m) { return [m](const B& b) { return orNull(b.timed > 0, b.*m); }; };
    const auto withBandwidth = [](double B::*m) { return [m](const B& b) { return orNull(b.no_bandwidth.empty(), b.*m); }; };
    f.insert(f.end(),
             {{"func", kString, kAlways,
               "`AllReduce`, `AllGather`, ...; point-to-point rows by their API func: `Send` rows count transfers, `AlltoAll`/`Gather`/`Scatter` "
               "rows count calls (each rank's pieces grouped into calls: tools/report/analyses/p2p_calls.h)",
               member(&B::func), "func"},
              {"bytes", kInteger, kAlways,
               "nccl-tests' message size S of the row's ops (per-rank count × n for AllGather, ReduceScatter; per-peer bytes × n for AlltoAll, "
               "Gather, Scatter)",
               member(&B::bytes), "size"},
              {"bucket", kString, kAlways, "the size bucket, e.g. `\"4-8 MiB\"`", member(&B::bucket)},
              {"algo", kString, kAlways, "NCCL's algorithm", member(&B::algo), "algo"},
              {"proto", kString, kAlways, "NCCL's protocol", member(&B::proto), "proto"},
              {"count", kInteger, kAlways, "instances", member(&B::count), "count"},
              {"timed", kInteger, kAlways, "instances with GPU times; the percentiles are over these", member(&B::timed)},
              {"time_us_p50", kNumber, kOrNull, "transfer time: the last-arriving member's GPU duration, median; null when `timed` is 0",
               timed(&B::time_us_p50), "time p50"},
              {"time_us_p90", kNumber, kOrNull, "the same, 90th percentile", timed(&B::time_us_p90), "time p90"},
              {"algbw_gbs_p50", kNumber, kOrNull, "S / time at the median", withBandwidth(&B::algbw_gbs_p50), "algBw GB/s"},
              {"busbw_gbs_p50", kNumber, kOrNull,
               "algBw × nccl-tests' factor: AllReduce 2(n−1)/n; AllGather, ReduceScatter, AlltoAll, Gather, Scatter (n−1)/n; Broadcast, Reduce, "
               "Send/Recv 1",
               withBandwidth(&B::busbw_gbs_p50), "busBw GB/s"},
              {"percentile_error", kNumber, kAlways,
               "0 when `bytes` and the percentiles are exact; else the relative error they are within (0.01): a row whose sizes, times or "
               "bandwidths take more than 4,096 distinct values is summarised by a mergeable sketch, not held value by value",
               member(&B::percentile_error)},
              {"no_bandwidth", kString, kOrNull, "why the bandwidth is null (e.g. the size was not recorded)",
               [](const B& b) { return textOrNull(b.no_bandwidth); }},
              {"total_time_us", kNumber, kOrNull, "the transfer times summed (exact), as `nsys stats` sums a kernel's; null when `timed` is 0",
               timed(&B::time_us_total), "total"},
              {"min_time_us", kNumber, kOrNull, "the shortest transfer time (exact); null when `timed` is 0", timed(&B::time_us_min)},
              {"max_time_us", kNumber, kOrNull, "the longest transfer time (exact); null when `timed` is 0", timed(&B::time_us_max)},
              {"time_fraction", kNumber, kAlways, "`total_time_us` over every row's: the share of the run's communication time this group took",
               member(&B::time_fraction), "of time"},
              {"mean_time_us", kNumber, kOrNull, "`total_time_us` over `timed`, as `nsys stats` averages; null when `timed` is 0",
               [](const B& b) { return orNull(b.timed > 0, b.time_us_total / static_cast<double>(std::max<uint64_t>(b.timed, 1))); }},
              {"channels", kInteger, kAlways, "the most channels any of its ops ran on (NCCL's nChannels; 0: not recorded)",
               [](const B& b) { return Value(static_cast<uint64_t>(b.channels)); }}});
    for (Field<B>& field : f)
      if (field.key.starts_with("time_us") || field.key.ends_with("gbs_p50")) markApproximate(field);
    return f;
  }();
  return fields;
}

const Fields<MatrixSlice>& matrixSliceFields() {
  using S = MatrixSlice;
  static const Fields<S> fields{
      {"label", kString, kAlways, "`\"all\"` for the whole run, else the communicator or func it is about", member(&S::label)},
      {"comm", kString, kOrNull, "the communicator's hex id; null when not per communicator", [](const S& s) { return commId(s.comm); }},
      {"func", kString, kOrNull, "the func; null when not per func", [](const S& s) { return textOrNull(s.func); }}};
  return fields;
}

const Fields<MatrixCell>& matrixCellFields() {
  using C = MatrixCell;
  static const Fields<C> fields{
      {"src", kInteger, kAlways, "the sending global rank", member(&C::src), "src"},
      {"dst", kInteger, kAlways, "the receiving global rank", member(&C::dst), "dst"},
      {"bytes", kInteger, kAlways, "bytes src sent to dst: point-to-point measured plus collectives modelled", member(&C::bytes), "bytes"},
      {"p2p_bytes", kInteger, kAlways, "the recorded point-to-point part of `bytes`", member(&C::p2p_bytes)},
      {"time_us", kNumber, kAlways, "summed transfer time of the ops that moved them", member(&C::time_us), "time",
       [](const C& c) { return c.time_us > 0 ? fmt::duration(c.time_us) : "-"; }},
      {"gbs", kNumber, kOrNull, "bytes of the ops with GPU times / `time_us`; null without time", [](const C& c) { return orNull(c.time_us > 0, c.gbs); },
       "achieved GB/s"},
      {"measured", kBool, kAlways, "every byte a recorded point-to-point (false: some modelled from a collective's algorithm)", member(&C::measured),
       "source", [](const C& c) { return std::string(c.measured ? "measured" : "modelled"); }}};
  return fields;
}

namespace {

// The overlap figures of a process or of one of its steps (OverlapRow and StepOverlap name
// them alike): known where the process had compute records; communication time also where
// only that was measured.
template <class Row>
Fields<Row> overlapFigureFields(auto process, auto figures, bool with_headers) {
  const auto known = [=](auto read) { return [=](const Row& r) { return orNull(process(r).available, read(figures(r))); }; };
  const auto header = [&](std::string_view h) { return with_headers ? h : std::string_view(); };
  // "comm time": communication, not a communicator, which "comm" names in every other table.
  return {{"comm_us", kNumber, kOnlyWhenKnown, "union of its communication kernels' GPU intervals; absent when none had GPU times",
           [=](const Row& r) { return orNull(process(r).available || figures(r).comm_us > 0, figures(r).comm_us); }, header("comm time")},
          {"overlapped_us", kNumber, kOnlyWhenKnown, "the part of `comm_us` under compute kernels; only when available",
           known([](const auto& f) { return f.overlapped_us; }), header("overlapped")},
          {"exposed_us", kNumber, kOnlyWhenKnown, "`comm_us` − `overlapped_us`; only when available", known([](const auto& f) { return f.exposed_us; }),
           header("exposed")},
          {"idle_us", kNumber, kOnlyWhenKnown, "GPU busy with neither, between its first and last communication kernel; only when available",
           known([](const auto& f) { return f.idle_us; }), header("idle")},
          {"compute_only_us", kNumber, kOnlyWhenKnown, "compute kernels with no communication under them, in the same span; only when available",
           known([](const auto& f) { return f.compute_only_us; })}};
}

}  // namespace

const Fields<OverlapRow>& overlapFields() {
  using O = OverlapRow;
  static const Fields<O> fields = concat<O>(
      concat<O>({{"rank", kInteger, kAlways, "global rank", member(&O::rank), "rank"},
                 {"available", kBool, kAlways, "compute-kernel records (CUPTI) were there, so overlap could be measured", member(&O::available)},
                 {"reason", kString, kOnlyWhenKnown,
                  "only when `available` is false: why (e.g. `\"no compute-kernel records: CUPTI was not attached\"`, or that they could not be "
                  "placed on the GPU clock)",
                  [](const O& o) { return o.available ? Value() : Value(o.reason); }}},
                overlapFigureFields<O>([](const O& o) -> const O& { return o; }, [](const O& o) -> const O& { return o; }, true)),
      {{"overlap_pct", kNumber, kOnlyWhenKnown, "100 × `overlapped_us` / `comm_us`; only when available",
        [](const O& o) { return orNull(o.available, o.overlap_pct); }, "overlap"},
       {"step_source", kString, kAlways,
        "`\"nvtx\"` (the repeating top-level NVTX range), `\"inferred\"` (the smallest repeating period of its op sequence, found in its first "
        "65,536 ops), `\"none\"`",
        member(&O::step_source)},
       {"step_count", kInteger, kAlways, "its steps (0: none found)", member(&O::step_count), "steps",
        [](const O& o) { return o.step_count == 0 ? std::string("none found") : std::to_string(o.step_count) + " (" + o.step_source + ")"; }},
       {"out_of_order", kInteger, kAlways,
        "ops recorded more than 16,384 places from their program order (placed where they came) and GPU intervals that far out of start "
        "order (their part before the union's last interval lost): where not 0, the row's figures are approximate",
        member(&O::out_of_order)}});
  return fields;
}

const Fields<OverlapStepRow>& overlapStepFields() {
  using S = OverlapStepRow;
  static const Fields<S> fields = concat<S>(
      {{"step", kInteger, kAlways, "0-based; a stretch's first", [](const S& s) { return Value(s.step.step); }},
       {"start_us", kNumber, kAlways, "of `step`, on its GPU clock from its first communication kernel; NVTX steps may start before it",
        [](const S& s) { return Value(s.step.start_us); }},
       {"last_step", kInteger, kOnlyWhenKnown, "only for a stretch: its last step",
        [](const S& s) { return s.step.last_step == s.step.step ? Value() : Value(s.step.last_step); }}},
      overlapFigureFields<S>([](const S& s) -> const OverlapRow& { return s.process; }, [](const S& s) -> const StepOverlap& { return s.step; },
                             false));
  return fields;
}

const Fields<PeerWaitRow>& peerWaitFields() {
  using W = PeerWaitRow;
  static const Fields<W> fields{
      {"rank", kInteger, kAlways, "who waited", member(&W::rank), "rank"},
      {"peer", kInteger, kAlways, "on whom", member(&W::peer), "waited for", [](const W& w) { return "rank " + std::to_string(w.peer); }},
      {"transfers", kInteger, kAlways, "sends and receives between them on `rank`'s side", member(&W::transfers), "transfers"},
      {"waited", kInteger, kAlways, "those in which it waited", member(&W::waited), "waited in"},
      {"wait_us", kNumber, kAlways, "the total wait", member(&W::wait_us), "wait"},
      {"steps", kInteger, kAlways, "`rank`'s steps (`overlap[].step_count`)", member(&W::steps)},
      {"wait_per_step_us", kNumber, kOnlyWhenKnown, "`wait_us` / `steps`; only with steps",
       [](const W& w) { return orNull(w.steps > 0, w.wait_per_step_us); }, "per step"},
      {"step_share_pct", kNumber, kOnlyWhenKnown, "the wait per step over its mean step length; only with two steps or more",
       [](const W& w) { return orNull(w.step_share_pct > 0, w.step_share_pct); }, "of its step"}};
  return fields;
}

const Fields<RankTrafficRow>& rankTrafficFields() {
  using T = RankTrafficRow;
  static const Fields<T> fields{
      {"rank", kInteger, kAlways, "global rank (a restarted rank's processes together)", member(&T::rank), "rank"},
      {"host", kString, kAlways, "its host", member(&T::host), "host"},
      {"collectives", kInteger, kAlways, "collective instances it took part in", member(&T::collectives), "collectives"},
      {"coll_bytes", kInteger, kAlways, "their per-rank payload, summed", member(&T::coll_bytes), "their bytes"},
      {"sends", kInteger, kAlways, "point-to-point sends (AlltoAll, Gather and Scatter pieces included)", member(&T::sends), "sends"},
      {"sent_bytes", kInteger, kAlways, "their bytes", member(&T::sent_bytes), "sent"},
      {"receives", kInteger, kAlways, "point-to-point receives", member(&T::receives), "receives"},
      {"received_bytes", kInteger, kAlways, "their bytes", member(&T::received_bytes), "received"},
      {"bytes_vs_median", kNumber, kAlways,
       "`coll_bytes` + `sent_bytes` over the median rank's (of an even count, the upper middle); 0 when that rank moved nothing",
       member(&T::bytes_vs_median), "vs median", [](const T& t) { return fmt::fixed(t.bytes_vs_median, 2) + "x"; }}};
  return fields;
}

const Fields<CallPathRow>& callPathFields() {
  using T = CallPathRow;
  static const Fields<T> fields{
      {"path", kString, kAlways,
       "the NVTX ranges open on the issuing thread, from the top down, joined by \" / \"; a top-level range's digits folded to `#` (the steps as one); `\"(no NVTX range)\"` for ops issued outside any",
       member(&T::path), "NVTX path"},
      {"ops", kInteger, kAlways, "rank-ops issued under it (one collective on 8 ranks is 8)", member(&T::ops), "ops"},
      {"ranks", kInteger, kAlways, "ranks that issued them", member(&T::ranks), "ranks"},
      {"bytes", kInteger, kAlways, "their payload as each rank recorded it (a transfer on both its sides)", member(&T::bytes), "bytes",
       [](const T& t) { return fmt::bytes(t.bytes); }},
      {"comm_us", kNumber, kAlways, "their GPU time, summed over ranks; time a rank's ops of the path share (an AlltoAll's pieces run in one kernel) counted once", member(&T::comm_us), "comm time",
       [](const T& t) { return fmt::duration(t.comm_us); }},
      {"comm_share", kNumber, kAlways, "of all the ops' GPU time, 0..1", member(&T::comm_share), "share",
       [](const T& t) { return fmt::percent(t.comm_share); }},
      {"exposed_us", kNumber, kOrNull,
       "the part of `comm_us` under no compute kernel of its rank (time a rank's ops of the path share counted once, ops of other paths running at once count theirs); null unless every rank that issued under the path recorded its compute kernels (CUPTI) placed on its GPU clock",
       [](const T& t) { return orNull(t.exposure_known, t.exposed_us); }, "exposed",
       [](const T& t) { return t.exposure_known ? fmt::duration(t.exposed_us) : std::string("-"); }},
      {"exposed_share", kNumber, kOrNull, "`exposed_us` over `comm_us`, 0..1; null as `exposed_us`",
       [](const T& t) { return orNull(t.exposure_known, t.exposed_share); }, "exposed share",
       [](const T& t) { return t.exposure_known ? fmt::percent(t.exposed_share) : std::string("-"); }},
      {"waited_us", kNumber, kOrNull,
       "the part of `comm_us` its ranks spent waiting in these ops for a later member to arrive (time a rank's ops of the path waited at once counted once; outside any range, each op's own): what a late peer, not moving the data, took; the culprits and their `wait_caused_us` say who. null where an op was a piece of an AlltoAll, Gather or Scatter (the call's kernel runs every piece, so no piece's wait is measured)",
       [](const T& t) { return orNull(t.waited_known, t.waited_us); }, "waited",
       [](const T& t) { return t.waited_known ? fmt::duration(t.waited_us) : std::string("-"); }},
      {"wait_caused_us", kNumber, kAlways,
       "the other ranks' waiting that delays created before ops issued under the path caused, there and passed along (the root-cause walk's, as `stragglers.ranks[].wait_caused_us` sums it by rank): which part of the program makes the others wait",
       member(&T::wait_caused_us), "wait caused", [](const T& t) { return fmt::duration(t.wait_caused_us); }}};
  return fields;
}

const Fields<CallStackRow>& callStackFields() {
  using T = CallStackRow;
  static const Fields<T> fields{
      {"site", kString, kAlways,
       "the function that called NCCL (the stack's innermost frame), `function (file:line)` where the module's lines are known here, else `module+0xADDRESS`",
       member(&T::site), "call site", [](const T& t) { return shortFrame(t.site); }},
      {"stack", kString, kAlways, "every frame from the outermost in, joined by `;`", member(&T::stack), "called from",
       [](const T& t) { return callersOf(t.stack, 3); }},
      {"samples", kInteger, kAlways, "ops whose stack was read here (one in COMMTRACE_STACKS, and each thread's first of a communicator, op and size class)",
       member(&T::samples), "samples"},
      {"ops", kInteger, kAlways, "rank-ops estimated from them: each sample stands for its thread's ops since its previous one", member(&T::ops), "ops (est.)"},
      {"ranks", kInteger, kAlways, "ranks with samples of it", member(&T::ranks), "ranks"},
      {"bytes", kInteger, kAlways, "their payload, estimated likewise", member(&T::bytes), "bytes (est.)", [](const T& t) { return fmt::bytes(t.bytes); }},
      {"api_us", kNumber, kAlways, "CPU time inside the NCCL calls, estimated likewise", member(&T::api_us), "API time (est.)",
       [](const T& t) { return fmt::duration(t.api_us); }},
      {"ops_share", kNumber, kAlways, "`ops` over every stack's, 0..1", member(&T::ops_share), "share", [](const T& t) { return fmt::percent(t.ops_share); }}};
  return fields;
}

const Fields<KernelRow>& kernelFields() {
  using K = KernelRow;
  static const Fields<K> fields{
      {"rank", kInteger, kAlways, "global rank; -1 for all ranks together (`top`)", member(&K::rank), "rank",
       [](const K& k) { return k.rank < 0 ? std::string("all") : std::to_string(k.rank); }},
      {"name", kString, kAlways, "the kernel's name, demangled (CUPTI gives a C++ kernel's mangled); memcpys named by direction (`\"Memcpy HtoD\"`), memsets `\"Memset\"`",
       member(&K::name), "kernel", [](const K& k) { return fmt::kernelName(k.name); }},
      {"type", kString, kAlways, "`\"computation\"`, `\"communication\"` (NCCL's kernels) or `\"memory\"` (memcpys and memsets), as HTA types them",
       member(&K::type), "type"},
      {"ranks", kInteger, kAlways, "ranks that ran it", member(&K::ranks), "ranks"},
      {"count", kInteger, kAlways, "times it ran", member(&K::count), "count"},
      {"total_us", kNumber, kAlways, "GPU time, summed", member(&K::total_us), "total"},
      {"avg_us", kNumber, kAlways, "per run", member(&K::avg_us), "avg"},
      {"max_us", kNumber, kAlways, "the longest run", member(&K::max_us), "max"},
      {"share_pct", kNumber, kAlways, "of its rank's GPU activity time; of all ranks' for `top`", member(&K::share_pct), "share"}};
  return fields;
}

const Fields<KernelTypeRow>& kernelTypeFields() {
  using T = KernelTypeRow;
  // People see each type's share of the rank's GPU activity beside its time.
  const auto withShare = [](double T::*m) {
    return [m](const T& t) {
      const double all = t.computation_us + t.communication_us + t.memory_us;
      return fmt::duration(t.*m) + " (" + fmt::fixed(all > 0 ? 100.0 * t.*m / all : 0, 1) + "%)";
    };
  };
  static const Fields<T> fields{
      {"rank", kInteger, kAlways, "global rank", member(&T::rank), "rank"},
      {"computation_us", kNumber, kAlways, "GPU time in kernels that are neither NCCL's nor memcpys or memsets", member(&T::computation_us),
       "computation", withShare(&T::computation_us)},
      {"communication_us", kNumber, kAlways, "in NCCL's kernels", member(&T::communication_us), "communication", withShare(&T::communication_us)},
      {"memory_us", kNumber, kAlways, "in memcpys and memsets", member(&T::memory_us), "memory", withShare(&T::memory_us)}};
  return fields;
}

const Fields<CudaSyncRow>& cudaSyncFields() {
  using R = CudaSyncRow;
  static const Fields<R> fields{{"rank", kInteger, kAlways, "global rank", member(&R::rank), "rank"},
                                {"host", kString, kAlways, "its host", member(&R::host)},
                                {"blocked_us", kNumber, kAlways, "CPU time inside all its sync calls", member(&R::blocked_us)}};
  return fields;
}

const Fields<CudaSyncCallRow>& cudaSyncCallFields() {
  using C = CudaSyncCallRow;
  static const Fields<C> fields = concat<C>(
      {{"call", kString, kAlways,
        "`cudaStreamSynchronize`, `cudaDeviceSynchronize`, `cudaEventSynchronize` or `cudaStreamWaitEvent`; the `_ptsz` entry points count "
        "as their plain twin",
        member(&C::call), "call"}},
      through(&C::stats, cudaSyncStatsFields()));
  return fields;
}

const Fields<CudaSyncStreamRow>& cudaSyncStreamFields() {
  using S = CudaSyncStreamRow;
  static const Fields<S> fields = concat<S>(
      {{"stream", kString, kAlways,
        "the `cudaStream_t` handle as hex: `0x0000000000000000` the legacy default stream, `cudaStreamLegacy` included; "
        "`0x0000000000000002` the per-thread default stream, which is what a `_ptsz` call on the null stream waits on, whichever thread",
        [](const S& s) { return Value(fmt::hexId(s.stream)); }, "stream", [](const S& s) { return tables::streamLabel(s.stream); }}},
      through(&S::stats, cudaSyncStatsFields()));
  return fields;
}

const Fields<StragglerRow>& stragglerFields() {
  using S = StragglerRow;
  static const Fields<S> fields{
      {"rank", kInteger, kAlways, "global rank", member(&S::rank), "rank"},
      {"host", kString, kAlways, "its host", member(&S::host), "host"},
      {"instances", kInteger, kAlways, "synchronizations it took part in (collectives, and sends and receives with their peer)", member(&S::instances)},
      {"wait_caused_us", kNumber, kAlways,
       "the others' waiting its created delays caused, in rank-time: where it arrived last and its gap explained it, and "
       "passed along to later ops by the ranks that waited (root-cause attribution)",
       member(&S::wait_caused_us), "wait caused"},
      {"late_fraction", kNumber, kAlways,
       "the share of its synchronizations' lateness it created (arriving last, with a gap longer than its peers' by the lateness) / "
       "`instances`",
       member(&S::late_fraction), "created"},
      {"mean_lateness_us", kNumber, kAlways, "mean of (its arrival − the first member's)", member(&S::mean_lateness_us), "mean lateness"},
      {"class", kString, kAlways, "`compute`, `host`, `input` (host delays now and then: an input pipeline's stall), `network`, `none` (not a straggler), `unknown`", member(&S::cls), "class"},
      {"confidence", kNumber, kAlways, "0..1: how clearly it is a straggler", member(&S::confidence), "confidence"},
      {"flagged", kBool, kAlways, "judged a straggler, not just last by chance", member(&S::flagged), "flagged"},
      {"evidence", kString, kAlways, "the numbers behind `class`, in words", [](const S& s) { return Value(evidenceWords(s)); }},
      {"chance_fraction", kNumber, kAlways, "the share of its instances it would have been last in by chance", member(&S::chance_fraction)},
      {"z", kNumber, kAlways,
       "how many standard errors its mean GPU gap before its ops exceeds its peers' typical gap (0 under 10 us: no delay): how "
       "systematic its own delays are",
       member(&S::z)},
      {"stretch_z", kNumber, kAlways,
       "the same over its worst stretch of one of its communicators' instances (at most 32 stretches of equal length each): a rank "
       "slow for part of the run is flagged when this reaches 6 and its wait caused there is 3x the median seat's, though `z` stays "
       "below 4; 0 for a rank flagged over the whole run or that caused no wait",
       member(&S::stretch_z)},
      {"median_wait_caused_us", kNumber, kAlways,
       "the typical rank's `wait_caused_us` it is held against: the median of the ranks on other hosts (of the other ranks on a "
       "one-host run), at least a tenth of the mean rank's",
       member(&S::median_wait_caused_us)},
      {"gap_ops", kInteger, kAlways, "flagged ranks: the ops it arrived last at whose GPU gap before them was measured (the figures below are over these)",
       member(&S::gap_ops)},
      {"gap_us_p50", kNumber, kOrNull, "median GPU gap before those ops (since its previous op ended); null when not measured", finite(&S::gap_us_p50)},
      {"peer_gap_us_p50", kNumber, kOrNull, "median of its peers' gaps before the same ops", finite(&S::peer_gap_us_p50)},
      {"gap_excess_us_p50", kNumber, kOrNull, "median of its gap minus its peers' (negative: shorter)", finite(&S::gap_excess_us_p50)},
      {"late_lateness_us_p50", kNumber, kOrNull, "median lateness at those ops", finite(&S::late_lateness_us_p50)},
      {"compute_share", kNumber, kOrNull,
       "0..1: the share of its longer gap that its compute kernels account for (over its peers'); null without kernel records",
       finite(&S::compute_share)},
      {"enqueue_fraction", kNumber, kOrNull,
       "0..1: how far into the gap the CPU enqueued the op (1: the GPU waited for the host); null without clock samples",
       finite(&S::enqueue_fraction)},
      {"delay_fraction", kNumber, kOrNull,
       "0..1: the share of its synchronizations at which it created a delay of 10 us or more (a host delay at under half of "
       "them is class `input`: now and then); null for a rank not flagged",
       finite(&S::delay_fraction)},
      {"step_saved_share", kNumber, kOrNull,
       "0..1: the share of the run's time fixing it would save, from a replay of the run with its created delays set to its "
       "peers' typical gap; null where it was not among the costliest origins replayed",
       finite(&S::step_saved_share)}};
  return fields;
}

const Fields<HostStragglerRow>& hostStragglerFields() {
  using H = HostStragglerRow;
  static const Fields<H> fields{
      {"host", kString, kAlways, "the host", member(&H::host), "host"},
      {"ranks", kRankList, kAlways, "its global ranks", member(&H::ranks), "ranks"},
      {"wait_caused_us", kNumber, kAlways, "as for `stragglers[]`, its ranks together", member(&H::wait_caused_us), "wait caused"},
      {"late_fraction", kNumber, kAlways, "as for `stragglers[]`, its ranks together", member(&H::late_fraction), "created"},
      {"z", kNumber, kAlways, "as for `stragglers[]`, its ranks' gaps together", member(&H::z)},
      {"confidence", kNumber, kAlways, "0..1, as for `stragglers[]`, its ranks together", member(&H::confidence), "confidence"},
      {"flagged", kBool, kAlways,
       "judged a straggler as a host: its ranks' waiting caused, per rank, 3x the typical rank's of the other hosts, more than half "
       "its ranks 2x it each, no rank more than 60% of the host's (its ranks create delays together), and `z` at least 4",
       member(&H::flagged), "flagged"},
      {"step_saved_share", kNumber, kOrNull, "as for `stragglers[]`, its ranks' delays removed together; null where not replayed",
       finite(&H::step_saved_share)}};
  return fields;
}

const Fields<CommStragglerRow>& commStragglerFields() {
  using C = CommStragglerRow;
  static const Fields<C> fields = [] {
    Fields<C> f;
    addComm(f);
    f.insert(f.end(),
             {{"worst_rank", kInteger, kAlways, "the global rank that caused it the most waiting", member(&C::worst_rank), "worst rank"},
              {"wait_caused_us", kNumber, kAlways, "by that rank", member(&C::wait_caused_us), "its wait caused"},
              {"total_wait_us", kNumber, kAlways, "all waiting in this communicator", member(&C::total_wait_us), "all waiting"},
              {"instances", kInteger, kAlways, "its collective instances", member(&C::instances), "instances"}});
    return f;
  }();
  return fields;
}

const Fields<SlowLinkRow>& linkFields() {
  using L = SlowLinkRow;
  static const Fields<L> fields{
      {"a", kInteger, kAlways, "one global rank of the pair", member(&L::a), "ranks",
       [](const L& l) { return std::to_string(l.a) + " <-> " + std::to_string(l.b); }},
      {"b", kInteger, kAlways, "the other", member(&L::b)},
      {"hosts", kString, kAlways, "`\"hostA <-> hostB\"`", member(&L::hosts), "hosts"},
      {"inter_host", kBool, kAlways, "the pair crosses hosts", member(&L::inter_host), "kind",
       [](const L& l) { return std::string(l.inter_host ? "inter-host" : "intra-host"); }},
      {"achieved_gbs", kNumber, kAlways, "best bandwidth any op crossing it reached", member(&L::achieved_gbs), "achieved GB/s"},
      {"peer_median_gbs", kNumber, kAlways, "median of the same over links of its kind (intra- or inter-host)", member(&L::peer_median_gbs),
       "median of kind GB/s"},
      {"ops", kInteger, kAlways, "ops crossing it", member(&L::ops), "ops"},
      {"confidence", kNumber, kAlways, "0..1: how clearly it is slow", member(&L::confidence), "confidence"},
      {"flagged", kBool, kAlways, "judged slow", member(&L::flagged), "flagged"},
      {"evidence", kString, kAlways, "the numbers behind it, in words", [](const L& l) { return Value(evidenceWords(l)); }},
      {"wire_gbs", kNumber, kAlways, "timed by NCCL's proxy (ProxyStep records; 0 where not): its slower direction's bytes over their time on the wire",
       member(&L::wire_gbs)},
      {"wire_median_gbs", kNumber, kAlways, "median of the same over links of its kind timed so", member(&L::wire_median_gbs)},
      {"wire_links", kInteger, kAlways, "links of its kind timed by the proxy", member(&L::wire_links)},
      {"wire_steps", kInteger, kAlways, "proxy send steps behind wire_gbs", member(&L::wire_steps)},
      {"wire_peer_wait_share", kNumber, kAlways, "0..1: share of those steps' time the sender waited for the peer's credit, not the wire",
       member(&L::wire_peer_wait_share)}};
  return fields;
}

const Fields<MismatchRow>& mismatchFields() {
  using M = MismatchRow;
  static const Fields<M> fields = [] {
    Fields<M> f;
    addComm(f);
    f.insert(f.end(),
             {{"func", kString, kAlways, "the op", member(&M::func), "func"},
              {"seq", kInteger, kAlways,
               "NCCL's per-(comm, func) sequence number; point-to-point: the transfer's index among its sender's sends to its receiver",
               member(&M::seq), "seq"},
              {"kind", kString, kAlways, "`missing` (other ranks issued it), `unfinished` (started, never completed), `file ends` (the rank's trace stops earlier)",
               member(&M::kind), "kind"},
              {"missing_ranks", kRankList, kAlways, "the ranks concerned", member(&M::missing_ranks), "ranks",
               [](const M& m) { return (m.comm_ranks ? "comm ranks " : "") + fmt::rankList(m.missing_ranks); }},
              {"comm_ranks", kBool, kAlways, "true: `missing_ranks` are communicator ranks (some global rank was unknown)", member(&M::comm_ranks)},
              {"detail", kString, kAlways, "one sentence: what is missing where", member(&M::detail), "detail"}});
    return f;
  }();
  return fields;
}

// "what was found: `empty_window`, ...": every kind the findings make, from their one list.
const std::string& findingKindMeaning() {
  static const std::string meaning = [] {
    std::string out = "what was found: ";
    for (const char* kind : kFindingKinds) out += std::string(out.back() == ' ' ? "" : ", ") + "`" + kind + "`";
    return out;
  }();
  return meaning;
}

const Fields<FindingRow>& findingFields() {
  using F = FindingRow;
  static const Fields<F> fields{
      {"finding", kString, kAlways, "the sentence, as `findings` has it", member(&F::finding)},
      {"kind", kString, kAlways, findingKindMeaning(), member(&F::kind)},
      {"severity", kString, kAlways,
       "`window`, `loss`, `culprit`, `cost`, `note`: the order findings come in (what makes the rest incomplete, every culprit, "
       "what communication costs, what could not be decided)",
       member(&F::severity)},
      {"level", kString, kAlways, "what it names: `run`, `rank`, `host`, `link`, `communicator`", member(&F::level)},
      {"subject", kString, kAlways,
       "`\"rank 3\"`, `\"host node1\"`, `\"rank 7 <-> rank 8\"`, a communicator (its name, else its hex id); `\"\"` for the run "
       "or a list of ranks",
       member(&F::subject)},
      {"ranks", kRankList, kAlways,
       "the global ranks concerned: a straggler's, a host's, a link's two, a bubble's waiting rank and its peer, the missing or "
       "left-open ranks",
       member(&F::ranks)},
      {"from_us", kNumber, kOrNull,
       "when it began: us on the aligned timeline from its first column (`lateness_heatmap`, `bandwidth_series`); for a straggler "
       "or host, the first of the stretches it was late in; null when not placed in time",
       finite(&F::from_us)},
      {"to_us", kNumber, kOrNull, "when it ended, likewise (the last stretch's end); null when not known", finite(&F::to_us)},
      {"cost_us", kNumber, kOrNull,
       "what it cost: the waiting a straggler or host caused, the exposed communication, a bubble's wait, the CPU blocked in CUDA "
       "sync; null for the rest",
       finite(&F::cost_us)},
      {"cost_per_step_us", kNumber, kOrNull,
       "`cost_us` per step: over the job's steps (the median rank's count and length in `overlap[]`) for a straggler or host, "
       "over its own for a rank's cost; null without two steps",
       finite(&F::cost_per_step_us)},
      {"cost_share", kNumber, kOrNull,
       "0..1: `cost_us` over the time it was taken from: the other ranks' time for a straggler or host (steps x mean step x "
       "ranks), the rank's own for exposed communication, a bubble or CUDA sync; null without two steps",
       finite(&F::cost_share)},
      {"step_saved_us", kNumber, kOrNull,
       "a straggler or host: what fixing it would save per step, from a replay of the run with its created delays set to its "
       "peers' typical gap (the step before less the step after); null where not estimated or without two steps",
       finite(&F::step_saved_us)},
      {"step_saved_share", kNumber, kOrNull, "the same as a share of the step (0..1); null where not estimated", finite(&F::step_saved_share)},
      {"confidence", kNumber, kOrNull, "0..1 where the judgement has one (stragglers, hosts, links)", finite(&F::confidence)}};
  return fields;
}

const Fields<ParallelismRow>& parallelismFields() {
  using P = ParallelismRow;
  static const Fields<P> fields{
      {"pattern", kString, kAlways,
       "what its ops show: `tensor parallel`, `data parallel (DDP)`, `fully sharded data parallel (FSDP / ZeRO-3: ...)` "
       "(AllGather at least 1.5x ReduceScatter), `sharded data parallel (one AllGather per ReduceScatter: ...)`, `pipeline "
       "parallel (sends between stages)`, `expert parallel (MoE AlltoAll)`, `other`; several joined by ` + `",
       member(&P::pattern), "pattern"},
      {"kinds", kString, kAlways, "the same as short words (`tp`, `ddp`, `fsdp`, `zero`, `pp`, `ep`, `other`), joined by `,`", member(&P::kinds)},
      {"groups", kInteger, kAlways, "communicators of this shape (the groups of one parallel dimension)", member(&P::groups), "groups"},
      {"size", kInteger, kAlways, "ranks in each", member(&P::size), "size"},
      {"within_host", kBool, kAlways, "each inside one host", member(&P::within_host), "in a host"},
      {"comms", kString, kAlways, "their names (else hex ids), the first four", member(&P::comms), "communicators"},
      {"evidence", kString, kAlways,
       "what each ran, per step (the job's steps) or in all: each func's instances (sends: transfers) and the size bucket most "
       "fell in. An AllReduce counts for `tensor parallel` or `data parallel` from 1 MiB (smaller ones carry losses and flags): "
       "tensor parallel when the groups are inside one host and smaller than the job",
       member(&P::evidence), "evidence"}};
  return fields;
}

const Fields<AdviceRow>& adviceFields() {
  using A = AdviceRow;
  static const Fields<A> fields{
      {"kind", kString, kAlways,
       "`nccl_algo` (another algorithm or protocol measured 1.25x faster for the same func and size bucket on the same "
       "communicator), `bucket_size` (8 or more collectives under 1 MiB a step at a quarter or less of the busBw the same "
       "communicator reached from 16 MiB), `overlap` (a rank's exposed communication 30% of its step or more), `drain_host`, "
       "`check_link`, `straggler_host`, `straggler_input`, `straggler_compute`, `straggler_network`, `straggler_record_more` (a flagged host, link or "
       "straggler, by its class; the last where its class is unknown: what to record to decide it)",
       member(&A::kind)},
      {"subject", kString, kAlways, "what it is about: a communicator, a host, a link's hosts, a rank", member(&A::subject), "about"},
      {"advice", kString, kAlways, "what to try", member(&A::advice), "try"},
      {"evidence", kString, kAlways, "the measured numbers that call for it", member(&A::evidence), "because"}};
  return fields;
}

std::vector<SchemaTable> schemaTables() {
  return {{"clocks.fits[]", markdownTable(clockFitFields())},
          {"matrix.slices[]", markdownTable(matrixSliceFields())},
          {"matrix.slices[].cells[]", markdownTable(matrixCellFields())},
          {"overlap[]", markdownTable(overlapFields())},
          {"overlap[].steps[]", markdownTable(overlapStepFields())},
          {"kernels rows", markdownTable(kernelFields())},
          {"kernels.types[]", markdownTable(kernelTypeFields())},
          {"cuda_sync[]", markdownTable(cudaSyncFields())},
          {"cuda_sync[].calls[]", markdownTable(cudaSyncCallFields())},
          {"cuda_sync[].calls[].streams[]", markdownTable(cudaSyncStreamFields())}};
}

}  // namespace commtrace::report::rows
