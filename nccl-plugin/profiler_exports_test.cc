// The NCCL profiler-plugin face, driven in-process through its exported ncclProfiler_vN
// tables by the NCCL driver's binding (descriptors filled as NCCL fills them), with the
// records read back from the rings.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/phase_path.h"
#include "core/string_table.h"
#include "core/clock.h"
#include "nccl-plugin/in_flight_report.h"
#include "nccl-plugin/op_pool.h"
#include "nccl-plugin/profiler_abi.h"
#include "ringbuffer/ring_registry.h"
#include "tools/nccl-driver/plugin_binding.h"

using namespace commtrace;
using namespace commtrace::nccl;

extern "C" {
extern const ProfilerV4 ncclProfiler_v4;
extern const ProfilerV5 ncclProfiler_v5;
extern const ProfilerV6 ncclProfiler_v6;
extern const ProfilerV7 ncclProfiler_v7;
}

namespace {

// Every record of every ring, drained (the tests share one process: filter by comm id).
std::vector<RecordSlot> drainAll() {
  std::vector<RecordSlot> out;
  RingRegistry::global().forEachRing([&](ThreadRing& ring) {
    ring.drain([&](const RecordSlot& slot) { out.push_back(slot); });
  });
  return out;
}

std::string text(StringId id) { return std::string(StringTable::global().lookup(id)); }

template <class T>
std::vector<T> recordsOf(const std::vector<RecordSlot>& slots, uint64_t comm_id) {
  std::vector<T> out;
  for (const RecordSlot& s : slots) {
    if (s.kind != KindOf<T>::value) continue;
    const T& r = reinterpret_cast<const T&>(s.payload);
    if (r.comm_id == comm_id) out.push_back(r);
  }
  return out;
}

int g_mask = 0;  // NCCL's one process-global activation mask

using driver::Event;

// One communicator of this version, its events handed to the plugin's exported table by
// the NCCL driver's binding, which fills each version's descriptor as NCCL does.
class Nccl {
 public:
  template <class Table>
  Nccl(int version, const Table& table, uint64_t comm_id, int n_ranks = 4, int rank = 0)
      : api_(driver::bindProfiler(version, &table)), comm_id_(comm_id) {
    EXPECT_EQ(api_->init(&ctx_, comm_id, &g_mask, "test-comm", 1, n_ranks, rank, nullptr), kSuccess);
  }
  ~Nccl() { EXPECT_EQ(api_->finalize(ctx_), kSuccess); }

  void* start(const Event& e) {
    Result result = kInternalError;
    void* handle = api_->startEvent(ctx_, e, &result);
    EXPECT_EQ(result, kSuccess);
    return handle;
  }
  void stop(void* h) { EXPECT_EQ(api_->stopEvent(h), kSuccess); }
  void state(void* h, EventState s, StateArgs* args) { EXPECT_EQ(api_->recordEventState(h, s, args), kSuccess); }

  void* kernelCh(void* parent, uint8_t channel, uint64_t start, uint64_t stop_time) {
    void* h = this->start(Event{.type = kKernelCh, .parent = parent, .channel_id = channel, .p_timer = start});
    StateArgs args{};
    args.kernel_ch.p_timer = stop_time;
    state(h, kKernelChStop, &args);
    return h;
  }

  uint64_t comm() const { return comm_id_; }

 private:
  std::unique_ptr<driver::ProfilerApi> api_;
  void* ctx_ = nullptr;
  uint64_t comm_id_;
};

Event collApi(const char* func, size_t count, const char* datatype) {
  return Event{.type = kCollApi, .func = func, .count = count, .datatype = datatype,
               .stream = reinterpret_cast<void*>(0x5000)};
}

Event coll(void* parent, uint64_t seq, const char* func, size_t count, const char* datatype, uint8_t channels) {
  return Event{.type = kColl, .parent = parent, .func = func, .count = count, .datatype = datatype, .seq_number = seq,
               .n_channels = channels, .n_warps = 8, .algo = "RING", .proto = "LL128"};
}

TEST(PluginTest, InitSetsTheDefaultMaskAndWritesCommInfo) {
  drainAll();
  {
    Nccl nccl(5, ncclProfiler_v5, 0xC0FFEE01, 8, 3);
    EXPECT_EQ(g_mask, kColl | kP2p | kKernelCh | kGroupApi | kCollApi | kP2pApi);
  }
  const auto infos = recordsOf<CommInfoRecord>(drainAll(), 0xC0FFEE01);
  ASSERT_EQ(infos.size(), 1u);
  EXPECT_EQ(text(infos[0].comm_name), "test-comm");
  EXPECT_EQ(infos[0].n_ranks, 8);
  EXPECT_EQ(infos[0].rank, 3);
}

TEST(PluginTest, V4MaskHasNoApiEvents) {
  Nccl nccl(4, ncclProfiler_v4, 0xC0FFEE02);
  EXPECT_EQ(g_mask, kColl | kP2p | kKernelCh);
}

// NCCL 2.28, one ungrouped ncclAllReduce: the Coll starts and stops inside the CollApi,
// the KernelCh events come later from the proxy thread.
TEST(PluginTest, UngroupedAllReduceJoinsApiCollAndKernelChannels) {
  drainAll();
  Nccl nccl(5, ncclProfiler_v5, 0xA11);
  void* api = nccl.start(collApi("AllReduce", 1000, "ncclFloat32"));
  ASSERT_NE(api, nullptr);
  void* c = nccl.start(coll(api, 7, "AllReduce", 1000, "ncclFloat32", 2));
  ASSERT_NE(c, nullptr);
  nccl.stop(c);
  nccl.stop(api);
  EXPECT_TRUE(recordsOf<CollRecord>(drainAll(), 0xA11).empty()) << "written before its GPU times arrived";

  std::thread proxy([&] {
    nccl.stop(nccl.kernelCh(c, 1, 5'000'100, 5'090'000));
    nccl.stop(nccl.kernelCh(c, 0, 5'000'000, 5'100'000));
  });
  proxy.join();
  const auto colls = recordsOf<CollRecord>(drainAll(), 0xA11);
  ASSERT_EQ(colls.size(), 1u);
  const CollRecord& r = colls[0];
  EXPECT_EQ(text(r.func), "AllReduce");
  EXPECT_EQ(text(r.datatype), "ncclFloat32");
  EXPECT_EQ(text(r.algo), "RING");
  EXPECT_EQ(text(r.proto), "LL128");
  EXPECT_EQ(r.phase_path, 0u) << "no NVTX range is open on this thread";
  EXPECT_EQ(r.seq, 7u);
  EXPECT_EQ(r.op_index, 0u);
  EXPECT_EQ(r.count, 1000u);
  EXPECT_EQ(r.bytes, 4000u);
  EXPECT_EQ(r.stream, 0x5000u);
  EXPECT_EQ(r.n_channels, 2);
  EXPECT_EQ(r.n_warps, 8);
  EXPECT_GT(r.cpu_start_ns, 0u);
  EXPECT_GE(r.cpu_end_ns, r.cpu_start_ns);
  EXPECT_EQ(r.gpu_start_ns, 5'000'000u);
  EXPECT_EQ(r.gpu_end_ns, 5'100'000u);
  EXPECT_EQ(r.gpu_channel_spread_ns, 100u);
}

// NCCL starts a Coll on the thread that issued it: the op keeps the NVTX path open there
// then, whatever thread completes it or whatever that thread opens next.
TEST(PluginTest, AnOpCarriesTheNvtxPathOpenWhereItStarted) {
  drainAll();
  Nccl nccl(5, ncclProfiler_v5, 0xA1A);
  tl_phase_path = 42;
  void* api = nccl.start(collApi("AllReduce", 1000, "ncclFloat32"));
  void* c = nccl.start(coll(api, 7, "AllReduce", 1000, "ncclFloat32", 1));
  tl_phase_path = 43;
  nccl.stop(c);
  nccl.stop(api);
  tl_phase_path = 0;
  std::thread proxy([&] { nccl.stop(nccl.kernelCh(c, 0, 5'000'000, 5'100'000)); });
  proxy.join();
  const auto colls = recordsOf<CollRecord>(drainAll(), 0xA1A);
  ASSERT_EQ(colls.size(), 1u);
  EXPECT_EQ(colls[0].phase_path, 42u);
}

// Grouped: the CollApi stops at its API return, before ncclGroupEnd starts the Coll. The
// AllGather's Coll carries NCCL's rewritten task (count in bytes, "ncclInt8"): the record
// keeps the user's count and datatype from the CollApi and the byte total from the Coll.
TEST(PluginTest, GroupedAllGatherKeepsUserCountAndNcclBytes) {
  drainAll();
  Nccl nccl(5, ncclProfiler_v5, 0xA12);
  void* g = nccl.start(Event{.type = kGroupApi, .group_depth = 2});
  ASSERT_NE(g, nullptr);
  nccl.state(g, kGroupStartApiStop, nullptr);
  void* api = nccl.start(collApi("AllGather", 256, "ncclBfloat16"));
  nccl.stop(api);
  nccl.state(g, kGroupEndApiStart, nullptr);
  void* c = nccl.start(coll(api, 0, "AllGather", 512, "ncclInt8", 1));
  nccl.stop(c);
  nccl.stop(g);
  nccl.stop(nccl.kernelCh(c, 0, 100, 200));

  const auto slots = drainAll();
  const auto colls = recordsOf<CollRecord>(slots, 0xA12);
  ASSERT_EQ(colls.size(), 1u);
  EXPECT_EQ(colls[0].count, 256u);
  EXPECT_EQ(text(colls[0].datatype), "ncclBfloat16");
  EXPECT_EQ(colls[0].bytes, 512u);
  EXPECT_GE(colls[0].cpu_end_ns, colls[0].cpu_start_ns);
  EXPECT_GT(colls[0].cpu_end_ns, 0u);
  const auto groups = recordsOf<ApiSpanRecord>(slots, 0xA12);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(text(groups[0].name), "ncclGroup");
  EXPECT_EQ(groups[0].arg, 2u);
}

TEST(PluginTest, UnknownDatatypeLeavesBytesUnknown) {
  drainAll();
  Nccl nccl(5, ncclProfiler_v5, 0xA13);
  void* api = nccl.start(collApi("AllReduce", 64, "Unknown"));  // ncclUint8 in 2.28
  void* c = nccl.start(coll(api, 0, "AllReduce", 64, "Unknown", 1));
  nccl.stop(c);
  nccl.stop(api);
  nccl.stop(nccl.kernelCh(c, 0, 1, 2));
  const auto colls = recordsOf<CollRecord>(drainAll(), 0xA13);
  ASSERT_EQ(colls.size(), 1u);
  EXPECT_EQ(text(colls[0].datatype), "Unknown");
  EXPECT_EQ(colls[0].count, 64u);
  EXPECT_EQ(colls[0].bytes, 0u);
}

TEST(PluginTest, V4CollTakesItsOwnTimesAndP2pChannelsAreIgnored) {
  drainAll();
  Nccl nccl(4, ncclProfiler_v4, 0xA14, 4);
  void* c = nccl.start(coll(reinterpret_cast<void*>(0x777), 3, "Broadcast", 4096, "ncclInt8", 1));
  nccl.stop(c);
  nccl.stop(nccl.kernelCh(c, 0, 10, 20));
  // v4: the binding leaves p2p.nChannels as stack garbage, as NCCL 2.27 does.
  void* send = nccl.start(Event{.type = kP2p, .func = "Send", .count = 100, .datatype = "ncclFloat16", .peer = 2});
  nccl.stop(send);

  const auto slots = drainAll();
  const auto colls = recordsOf<CollRecord>(slots, 0xA14);
  ASSERT_EQ(colls.size(), 1u);
  EXPECT_EQ(text(colls[0].func), "Broadcast");
  EXPECT_EQ(colls[0].bytes, 4096u);
  EXPECT_EQ(colls[0].seq, 3u);
  EXPECT_GT(colls[0].cpu_start_ns, 0u);
  EXPECT_GE(colls[0].cpu_end_ns, colls[0].cpu_start_ns);
  EXPECT_EQ(colls[0].gpu_end_ns, 20u);
  const auto p2ps = recordsOf<P2pRecord>(slots, 0xA14);
  ASSERT_EQ(p2ps.size(), 1u);
  EXPECT_EQ(p2ps[0].n_channels, 0);
  EXPECT_EQ(p2ps[0].bytes, 200u);
  EXPECT_EQ(p2ps[0].peer, 2);
}

// AlltoAll decomposes into per-peer Send/Recv P2p events, each under a P2pApi "AlltoAll".
TEST(PluginTest, AlltoAllPiecesKeepTheirParentFuncAndPerPeerIndex) {
  drainAll();
  Nccl nccl(5, ncclProfiler_v5, 0xA16, 3);
  std::vector<void*> ops;
  for (int round = 0; round < 2; ++round) {
    for (int peer = 0; peer < 3; ++peer) {
      for (const char* dir : {"Send", "Recv"}) {
        void* api = nccl.start(Event{.type = kP2pApi, .func = "AlltoAll", .count = 8, .datatype = "ncclInt32"});
        nccl.stop(api);
        void* h = nccl.start(Event{.type = kP2p, .parent = api, .func = dir, .count = 8, .datatype = "ncclInt32",
                                   .n_channels = 1, .peer = peer});
        nccl.stop(h);
        nccl.stop(nccl.kernelCh(h, 0, 1000, 2000 + peer));
      }
    }
  }
  const auto p2ps = recordsOf<P2pRecord>(drainAll(), 0xA16);
  ASSERT_EQ(p2ps.size(), 12u);
  for (size_t i = 0; i < p2ps.size(); ++i) {
    EXPECT_EQ(text(p2ps[i].parent_func), "AlltoAll");
    EXPECT_EQ(p2ps[i].bytes, 32u);
    EXPECT_EQ(p2ps[i].op_index, i < 6 ? 0u : 1u) << "k-th send to a peer has index k";
    EXPECT_EQ(p2ps[i].gpu_end_ns, 2000u + p2ps[i].peer);
  }
}

TEST(PluginTest, NullAndForeignArgumentsAreHarmless) {
  drainAll();
  Nccl nccl(5, ncclProfiler_v5, 0xA17);
  // NULL descriptor, NULL handle pointer, NULL context
  void* h = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(ncclProfiler_v5.start_event(nullptr, &h, nullptr), kSuccess);
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(ncclProfiler_v5.start_event(nullptr, nullptr, nullptr), kSuccess);
  // Foreign, stale and forged handles
  for (uint64_t bits : {0ull, 1ull, 0xdeadbeefull, 0xC700000000000000ull, 0xC7F0000012345678ull, ~0ull}) {
    void* foreign = reinterpret_cast<void*>(bits);
    EXPECT_EQ(ncclProfiler_v5.stop_event(foreign), kSuccess);
    EXPECT_EQ(ncclProfiler_v5.record_event_state(foreign, kKernelChStop, nullptr), kSuccess);
    StateArgs args{};
    EXPECT_EQ(ncclProfiler_v5.record_event_state(foreign, kProxyStepSendWait, &args), kSuccess);
    EXPECT_EQ(nccl.start(coll(foreign, 0, "AllReduce", 1, "ncclFloat32", 0)) != nullptr, true);
  }
  // A NULL-named op with NULL strings everywhere.
  void* c = nccl.start(coll(nullptr, 0, nullptr, 1, nullptr, 0));
  ASSERT_NE(c, nullptr);
  nccl.stop(c);
  // Untracked event types get a NULL handle.
  for (EventType untracked : {kProxyCtrl, kKernelLaunch, kNetPlugin}) {
    EXPECT_EQ(nccl.start(Event{.type = untracked}), nullptr);
  }
}

TEST(PluginTest, LateAndSurplusChildrenNeverDuplicateARecord) {
  drainAll();
  Nccl nccl(5, ncclProfiler_v5, 0xA18);
  void* api = nccl.start(collApi("AllReduce", 1, "ncclFloat32"));
  void* c = nccl.start(coll(api, 0, "AllReduce", 1, "ncclFloat32", 1));
  nccl.stop(c);
  nccl.stop(api);
  void* k = nccl.kernelCh(c, 0, 1, 2);
  nccl.stop(k);
  nccl.stop(k);  // twice
  nccl.stop(c);  // the op again, after it completed
  nccl.stop(api);
  void* late = nccl.kernelCh(c, 1, 3, 4);  // a channel NCCL did not announce
  EXPECT_EQ(late, nullptr);
  nccl.stop(late);
  EXPECT_EQ(recordsOf<CollRecord>(drainAll(), 0xA18).size(), 1u);
}

TEST(PluginTest, ProxyOpOfAnotherProcessNeverReadsItsParent) {
  Nccl nccl(5, ncclProfiler_v5, 0xA19);
  void* op = nccl.start(Event{.type = kProxyOp, .parent = reinterpret_cast<void*>(0xC700000000000001ull),
                               .peer = 1, .pid = getpid() + 1, .channel_id = 0, .n_steps = 4, .chunk_size = 4096,
                               .is_send = 1});
  ASSERT_NE(op, nullptr);
  {
    plugin::SharedSnapshot s{};
    ASSERT_TRUE(plugin::OpPool::global().snapshot(op, plugin::roleBit(plugin::Role::kProxyOp), s));
    EXPECT_EQ(s.comm_id, 0xA19u);
    EXPECT_EQ(s.op_index, ~uint64_t{0}) << "op of unknown parent";
  }
  nccl.stop(op);
}

TEST(PluginTest, ProxyStepsRecordStatesAndBytes) {
  drainAll();
  Nccl nccl(5, ncclProfiler_v5, 0xA1A);
  void* api = nccl.start(collApi("AllReduce", 1, "ncclFloat32"));
  void* c = nccl.start(coll(api, 0, "AllReduce", 1, "ncclFloat32", 1));
  void* op = nccl.start(Event{.type = kProxyOp, .parent = c, .peer = 5, .pid = getpid(), .channel_id = 3,
                               .n_steps = 1, .chunk_size = 4096, .is_send = 1});
  void* step = nccl.start(Event{.type = kProxyStep, .parent = op, .step = 0});
  StateArgs args{};
  nccl.state(step, kProxyStepSendGpuWait, &args);
  nccl.state(step, kProxyStepSendPeerWait, &args);
  args.proxy_step.trans_size = 4096;
  nccl.state(step, kProxyStepSendWait, &args);
  nccl.stop(step);
  nccl.stop(op);
  nccl.stop(c);
  nccl.stop(api);
  nccl.stop(nccl.kernelCh(c, 0, 1, 2));
  const auto slots = drainAll();
  const auto steps = recordsOf<ProxyStepRecord>(slots, 0xA1A);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].trans_bytes, 4096u);
  EXPECT_EQ(steps[0].peer, 5);
  EXPECT_EQ(steps[0].channel, 3);
  EXPECT_EQ(steps[0].is_send, 1);
  EXPECT_EQ(steps[0].op_index, recordsOf<CollRecord>(slots, 0xA1A).at(0).op_index);
  EXPECT_LE(steps[0].cpu_start_ns, steps[0].state_ns[0]);
  EXPECT_LE(steps[0].state_ns[0], steps[0].state_ns[2]);
  EXPECT_LE(steps[0].state_ns[2], steps[0].cpu_end_ns);
}

// Ops whose KernelCh never all arrived are written once, at finalize, with what is known.
TEST(PluginTest, FinalizeWritesOpsStillWaitingForTheirChannels) {
  drainAll();
  {
    Nccl nccl(5, ncclProfiler_v5, 0xA1B);
    void* api = nccl.start(collApi("AllReduce", 1, "ncclFloat32"));
    void* c = nccl.start(coll(api, 0, "AllReduce", 1, "ncclFloat32", 4));
    nccl.stop(c);
    nccl.stop(api);
    nccl.stop(nccl.kernelCh(c, 0, 10, 20));  // 1 of 4 channels
    EXPECT_TRUE(recordsOf<CollRecord>(drainAll(), 0xA1B).empty());
  }
  const auto colls = recordsOf<CollRecord>(drainAll(), 0xA1B);
  ASSERT_EQ(colls.size(), 1u);
  EXPECT_EQ(colls[0].gpu_start_ns, 10u);
}

TEST(PluginTest, ExhaustedPoolLeavesEventsUntrackedCountedAndReported) {
  drainAll();
  const uint64_t before = plugin::OpPool::global().exhausted();
  {
    Nccl nccl(5, ncclProfiler_v5, 0xA1C);
    std::vector<void*> live;
    for (uint32_t i = 0; i < plugin::OpPool::kSlots + 100; ++i) {
      live.push_back(nccl.start(coll(nullptr, i, "AllReduce", 1, "ncclFloat32", 1)));
    }
    EXPECT_EQ(live.back(), nullptr);
    EXPECT_GT(plugin::OpPool::global().exhausted(), before);
    for (void* h : live) nccl.stop(h);  // NULL handles included
    for (void* h : live) nccl.stop(nccl.kernelCh(h, 0, 1, 2));
    EXPECT_NE(nccl.start(coll(nullptr, 0, "AllReduce", 1, "ncclFloat32", 0)), nullptr) << "slots came back";
  }
  uint64_t untracked = 0;
  for (const RecordSlot& s : drainAll()) {
    if (s.kind == RecordKind::kDropSummary) untracked = std::max(untracked, s.payload.drop_summary.untracked);
  }
  EXPECT_EQ(untracked, plugin::OpPool::global().exhausted()) << "finalize writes the cumulative count";
}

// Settings are read once per process: each case runs in a fresh child.
// A hung op never completes, so only the flusher's scan can say it is there: once it has
// been in flight a second, each scan (a second apart) reports the oldest op per communicator,
// and one record clears the report once nothing is stuck any more.
TEST(PluginTest, OpsInFlightForASecondAreReportedUntilTheyComplete) {
  constexpr uint64_t kSecond = 1'000'000'000;
  drainAll();
  Nccl coll_comm(5, ncclProfiler_v5, 0xC0FFEE40, 4, 1);
  Nccl p2p_comm(5, ncclProfiler_v5, 0xC0FFEE41, 4, 1);
  const uint64_t t0 = nowNs();
  void* api = coll_comm.start(collApi("AllReduce", 1024, "ncclFloat32"));
  void* op = coll_comm.start(coll(api, 17, "AllReduce", 1024, "ncclFloat32", 2));
  coll_comm.stop(op);
  coll_comm.stop(api);  // handed to the proxy: in flight until its channels stop
  void* send_api = p2p_comm.start(Event{.type = kP2pApi, .func = "Send", .count = 8, .datatype = "ncclInt32"});
  void* send = p2p_comm.start(Event{.type = kP2p, .parent = send_api, .func = "Send", .count = 8, .datatype = "ncclInt32", .n_channels = 1,
                                    .peer = 3});
  p2p_comm.stop(send);
  p2p_comm.stop(send_api);
  auto reported = [&](uint64_t now) {
    plugin::reportOpsInFlight(now);
    const std::vector<RecordSlot> slots = drainAll();
    std::vector<InFlightRecord> out = recordsOf<InFlightRecord>(slots, coll_comm.comm());
    for (const InFlightRecord& r : recordsOf<InFlightRecord>(slots, p2p_comm.comm())) out.push_back(r);
    return out;
  };

  EXPECT_TRUE(reported(t0 + kSecond / 2).empty()) << "half a second in flight is traffic, not a hang";
  std::vector<InFlightRecord> stuck = reported(t0 + 2 * kSecond);
  ASSERT_EQ(stuck.size(), 2u);
  const InFlightRecord& c = stuck[0];
  EXPECT_EQ(text(c.func), "AllReduce");
  EXPECT_EQ(c.seq, 17u);
  EXPECT_EQ(c.op_index, 0u);
  EXPECT_EQ(c.peer, -1);
  EXPECT_EQ(c.in_flight, 1u);
  EXPECT_GE(c.cpu_start_ns, t0);
  EXPECT_EQ(c.cpu_seen_ns, t0 + 2 * kSecond);
  EXPECT_EQ(text(stuck[1].func), "Send");
  EXPECT_EQ(stuck[1].peer, 3);
  EXPECT_TRUE(reported(t0 + 2 * kSecond + kSecond / 2).empty()) << "one scan a second";

  coll_comm.stop(coll_comm.kernelCh(op, 0, 100, 200));
  coll_comm.stop(coll_comm.kernelCh(op, 1, 100, 250));
  stuck = reported(t0 + 3 * kSecond);
  ASSERT_EQ(stuck.size(), 2u);
  EXPECT_EQ(stuck[0].comm_id, coll_comm.comm());
  EXPECT_EQ(stuck[0].in_flight, 0u) << "the completed AllReduce's report is cleared";
  EXPECT_EQ(stuck[1].comm_id, p2p_comm.comm());
  EXPECT_EQ(stuck[1].in_flight, 1u) << "the send is still stuck";
  p2p_comm.stop(p2p_comm.kernelCh(send, 0, 100, 200));
  stuck = reported(t0 + 4 * kSecond);
  ASSERT_EQ(stuck.size(), 1u);
  EXPECT_EQ(stuck[0].in_flight, 0u);
  EXPECT_TRUE(reported(t0 + 5 * kSecond).empty());
}

TEST(PluginSettingsTest, ProxyEventsAndKernelTimingChangeTheMask) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("COMMTRACE_PROXY_EVENTS", "1", 1);
        setenv("COMMTRACE_KERNEL_TIMING", "off", 1);
        Nccl nccl(5, ncclProfiler_v5, 0xB01);
        std::exit(g_mask == (kColl | kP2p | kGroupApi | kCollApi | kP2pApi | kProxyOp | kProxyStep) ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(PluginSettingsTest, BadValueIsReportedOnceAndTheDefaultUsed) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("COMMTRACE_PROXY_EVENTS", "sometimes", 1);
        Nccl a(5, ncclProfiler_v5, 0xB02);
        Nccl b(5, ncclProfiler_v5, 0xB03);
        std::exit((g_mask & kProxyOp) == 0 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0),
      "commtrace: COMMTRACE_PROXY_EVENTS=sometimes is not 1/0, true/false, yes/no or on/off; using 0\n$");
}

}  // namespace
