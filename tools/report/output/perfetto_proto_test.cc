// The export in Perfetto's protobuf format, read back through a declaration of the fields
// it writes (perfetto_trace_check.proto): a process per rank with a track per stream, every
// slice a BEGIN and an END in time order on its process's sequence, properly nested, its args
// as typed debug annotations, one collective's slices on every rank sharing a flow id.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "perfetto_trace_check.pb.h"
#include "tests/support/run_model_builder.h"
#include "tools/report/output/perfetto_export.h"

namespace commtrace::report {
namespace {

namespace pb = commtrace::perfetto_check;
using testutil::RunModelBuilder;
constexpr uint64_t kBase = 1'790'000'000'000'000'000ull;

uint64_t at(double us) { return kBase + static_cast<uint64_t>(us * 1000); }

// Two ranks: an AllReduce rank 1 joins 40 us late, a send 0 -> 1, a compute kernel on rank 0.
RunModelBuilder twoRanks() {
  RunModelBuilder b({"a", "b"});
  const uint32_t world = b.comm({0, 1}, "world");
  b.run.comms[world].id = 0xfeed;
  b.coll(world, "AllReduce", 4 << 20, {{at(0), at(100)}, {at(40), at(100)}});
  b.p2p(world, "Send", 0, 1, 1 << 20, {at(150), at(170)}, {at(150), at(170)});
  b.run.timelines[0] = {.compute = {{at(10), at(50)}}, .has_kernel_records = true};
  return b;
}

ClockAlignment aligned(size_t n) {
  ClockAlignment a;
  a.ref_from_gpu.assign(n, LinearMap{1.0, 0.0, true});
  return a;
}

std::string encoded(const RunModel& run, TraceEncoding encoding, PerfettoStats* stats = nullptr) {
  std::ostringstream out;
  const PerfettoStats s = writePerfettoTrace(run, aligned(run.processes.size()), {.encoding = encoding}, out);
  if (stats != nullptr) *stats = s;
  return out.str();
}

pb::Trace parsed(const RunModel& run, PerfettoStats* stats = nullptr) {
  pb::Trace trace;
  EXPECT_TRUE(trace.ParseFromString(encoded(run, TraceEncoding::kProtobuf, stats)));
  return trace;
}

// A slice as BEGIN/END pairs rebuild it, interned strings resolved.
struct RebuiltSlice {
  std::string name, category;
  uint64_t track = 0, start = 0, end = 0;
  std::vector<uint64_t> flows;
  std::map<std::string, pb::DebugAnnotation> args;
};

// One sequence's interned strings, by kind and iid.
struct Interned {
  using Table = std::map<uint64_t, std::string>;
  Table categories, event_names, arg_names, string_values;
  void add(const pb::InternedData& d) {
    for (auto [table, entries] : {std::pair{&categories, &d.event_categories()}, std::pair{&event_names, &d.event_names()},
                                  std::pair{&arg_names, &d.debug_annotation_names()},
                                  std::pair{&string_values, &d.debug_annotation_string_values()}})
      for (const pb::InternedName& n : *entries) EXPECT_TRUE(table->emplace(n.iid(), n.name()).second) << "iid " << n.iid() << " interned twice";
  }
  std::string lookup(const Table& table, uint64_t iid) const {
    const auto it = table.find(iid);
    EXPECT_NE(it, table.end()) << "iid " << iid << " used before it was interned";
    return it == table.end() ? "" : it->second;
  }
};

// Replays every sequence's events as a viewer would: a stack of open slices per track.
std::vector<RebuiltSlice> rebuild(const pb::Trace& trace) {
  std::vector<RebuiltSlice> done;
  std::map<uint64_t, std::vector<RebuiltSlice>> open;
  std::map<uint32_t, uint64_t> last_time;  // per sequence
  std::map<uint32_t, Interned> interned;    // per sequence
  for (const pb::TracePacket& p : trace.packet()) {
    EXPECT_TRUE(p.has_trusted_packet_sequence_id());
    Interned& strings = interned[p.trusted_packet_sequence_id()];
    if (p.sequence_flags() & 1) strings = {};
    strings.add(p.interned_data());
    if (!p.has_track_event()) continue;
    const pb::TrackEvent& e = p.track_event();
    EXPECT_GE(p.timestamp(), last_time[p.trusted_packet_sequence_id()]) << "a sequence is in time order";
    last_time[p.trusted_packet_sequence_id()] = p.timestamp();
    if (e.type() == pb::TrackEvent::TYPE_SLICE_BEGIN) {
      EXPECT_TRUE(p.sequence_flags() & 2) << "uses interned strings";
      RebuiltSlice s{strings.lookup(strings.event_names, e.name_iid()), strings.lookup(strings.categories, e.category_iids(0)),
                     e.track_uuid(), p.timestamp(), 0, {e.flow_ids().begin(), e.flow_ids().end()}, {}};
      for (pb::DebugAnnotation a : e.debug_annotations()) {
        if (a.has_string_value_iid()) a.set_string_value(strings.lookup(strings.string_values, a.string_value_iid()));
        s.args[strings.lookup(strings.arg_names, a.name_iid())] = a;
      }
      open[e.track_uuid()].push_back(std::move(s));
    } else if (e.type() == pb::TrackEvent::TYPE_SLICE_END) {
      auto& stack = open[e.track_uuid()];
      if (stack.empty()) {
        ADD_FAILURE() << "END without BEGIN on track " << e.track_uuid();
        continue;
      }
      stack.back().end = p.timestamp();
      done.push_back(std::move(stack.back()));
      stack.pop_back();
    }
  }
  for (const auto& [track, stack] : open) EXPECT_TRUE(stack.empty()) << "track " << track << " left slices open";
  return done;
}

// A slice by name and start (within 0.3 us: the builder's GPU times near 1.8e18 ns are doubles).
const RebuiltSlice* find(const std::vector<RebuiltSlice>& slices, const std::string& name, double start_us) {
  for (const RebuiltSlice& s : slices)
    if (s.name == name && std::abs(static_cast<double>(s.start) - start_us * 1000) < 300) return &s;
  return nullptr;
}

TEST(PerfettoProto, ProcessesAndTheirStreamTracks) {
  const pb::Trace trace = parsed(twoRanks().run);
  std::map<uint64_t, std::string> processes;   // uuid -> name
  std::map<uint64_t, uint64_t> track_parent;   // uuid -> parent
  std::set<uint32_t> cleared;
  for (const pb::TracePacket& p : trace.packet()) {
    if (p.sequence_flags() & 1) cleared.insert(p.trusted_packet_sequence_id());
    if (!p.has_track_descriptor()) continue;
    const pb::TrackDescriptor& d = p.track_descriptor();
    EXPECT_NE(d.uuid(), 0u);
    if (d.has_process()) processes[d.uuid()] = d.process().process_name() + " pid " + std::to_string(d.process().pid());
    if (d.has_parent_uuid()) track_parent[d.uuid()] = d.parent_uuid();
  }
  EXPECT_EQ(processes.size(), 2u);
  EXPECT_EQ(processes.begin()->second, "rank 0 (a) pid 0");
  EXPECT_EQ(std::next(processes.begin())->second, "rank 1 (b) pid 1");
  EXPECT_EQ(track_parent.size(), 3u);  // rank 0: its stream and its compute kernels; rank 1: its stream
  for (const auto& [track, parent] : track_parent) EXPECT_TRUE(processes.count(parent)) << track;
  for (const pb::TracePacket& p : trace.packet())
    EXPECT_TRUE(cleared.count(p.trusted_packet_sequence_id())) << "every sequence starts cleared";
}

TEST(PerfettoProto, SlicesNestInTimeOrderWithTypedArgs) {
  PerfettoStats stats;
  const std::vector<RebuiltSlice> slices = rebuild(parsed(twoRanks().run, &stats));
  EXPECT_EQ(slices.size(), stats.slices);
  EXPECT_EQ(stats.slices, 5u);  // rank 0: AllReduce, Send, compute; rank 1: AllReduce, Recv
  const RebuiltSlice* late = find(slices, "AllReduce", 40);
  ASSERT_NE(late, nullptr);
  EXPECT_NEAR(static_cast<double>(late->end), 100'000.0, 300);
  EXPECT_EQ(late->category, "collective");
  EXPECT_EQ(late->args.at("comm").string_value(), "0x000000000000feed");
  EXPECT_EQ(late->args.at("bytes").uint_value(), 4u << 20);
  EXPECT_EQ(late->args.at("comm_rank").int_value(), 1);
  EXPECT_NEAR(late->args.at("transfer_us").double_value(), 60.0, 1e-9);
  const RebuiltSlice* early = find(slices, "AllReduce", 0);
  ASSERT_NE(early, nullptr);
  EXPECT_NEAR(early->args.at("wait_us").double_value(), 40.0, 1e-9);
  const RebuiltSlice* compute = find(slices, "compute", 10);
  ASSERT_NE(compute, nullptr);
  EXPECT_NEAR(static_cast<double>(compute->end), 50'000.0, 300);
}

TEST(PerfettoProto, OneOperationsSlicesShareAFlow) {
  PerfettoStats stats;
  const std::vector<RebuiltSlice> slices = rebuild(parsed(twoRanks().run, &stats));
  std::map<uint64_t, std::multiset<std::string>> by_flow;
  for (const RebuiltSlice& s : slices)
    for (uint64_t flow : s.flows) by_flow[flow].insert(s.name);
  EXPECT_EQ(by_flow.size(), 2u);
  EXPECT_EQ(by_flow.begin()->second, (std::multiset<std::string>{"AllReduce", "AllReduce"}));
  EXPECT_EQ(std::next(by_flow.begin())->second, (std::multiset<std::string>{"Recv", "Send"}));
  EXPECT_EQ(stats.flows, 2u);
  EXPECT_TRUE(find(slices, "compute", 10)->flows.empty());
}

// Touching and nested slices on one stream: ENDs come before a BEGIN at the same time, a
// child's END before its parent's at the same time.
TEST(PerfettoProto, TouchingAndNestedSlicesCloseInOrder) {
  RunModelBuilder b({"a"});
  const uint32_t solo = b.comm({0}, "solo");
  b.coll(solo, "AllReduce", 1 << 20, {{at(0), at(10)}});
  b.coll(solo, "AllReduce", 1 << 20, {{at(10), at(20)}});
  b.coll(solo, "Broadcast", 1 << 20, {{at(10), at(20)}});  // encloses the second: same span
  b.coll(solo, "Reduce", 1 << 20, {{at(15), at(20)}});     // nested, ends with its parents
  const std::vector<RebuiltSlice> slices = rebuild(parsed(b.run));
  ASSERT_EQ(slices.size(), 4u);
  for (const RebuiltSlice& s : slices) EXPECT_GT(s.end, s.start) << s.name;
  EXPECT_NEAR(static_cast<double>(find(slices, "AllReduce", 0)->end), 10'000.0, 300);
  EXPECT_NEAR(static_cast<double>(find(slices, "Reduce", 15)->end), 20'000.0, 300);
}

TEST(PerfettoProto, SmallerThanTheJson) {
  RunModelBuilder b({"a", "b", "c", "d"});
  const uint32_t world = b.comm({0, 1, 2, 3}, "world");
  for (int i = 0; i < 500; ++i) {
    const double t = 200.0 * i;
    b.coll(world, "AllReduce", 1 << 20, {{at(t), at(t + 90)}, {at(t + 3), at(t + 90)}, {at(t + 5), at(t + 90)}, {at(t + 7), at(t + 90)}});
  }
  const size_t proto = encoded(b.run, TraceEncoding::kProtobuf).size(), json = encoded(b.run, TraceEncoding::kJson).size();
  EXPECT_LT(proto * 1.8, static_cast<double>(json)) << proto << " bytes of protobuf, " << json << " of JSON";
  RecordProperty("protobuf_bytes", std::to_string(proto));
  RecordProperty("json_bytes", std::to_string(json));
}

}  // namespace
}  // namespace commtrace::report
