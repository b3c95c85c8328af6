#include "tools/nccl-driver/rank_player.h"

#include "tools/nccl-driver/nvtx_ranges.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <thread>

namespace commtrace::driver {
namespace {

using namespace commtrace::nccl;

// NCCL starts an event when the op's mask has its bit or any descendant's (2.26+):
// enabling ProxyOp alone still yields the GroupApi, CollApi, Group and Coll above it.
constexpr int kTaskChildren = kProxyOp | kProxyStep | kKernelCh | kNetPlugin;
constexpr int kCollFamily = kColl | kTaskChildren;
constexpr int kP2pFamily = kP2p | kTaskChildren;
constexpr int kGroupFamily = kGroup | kColl | kP2p | kTaskChildren;
constexpr int kCeFamily = kCeColl | kCeSync | kCeBatch;
constexpr int kCollApiFamily = kCollApi | kCollFamily | kCeFamily;
constexpr int kP2pApiFamily = kP2pApi | kP2pFamily;
constexpr int kGroupApiFamily = kGroupApi | kCollApi | kP2pApi | kKernelLaunch | kGroupFamily | kCeFamily;
constexpr int kProxyOpFamily = kProxyOp | kProxyStep | kNetPlugin;
constexpr int kProxyStepFamily = kProxyStep | kNetPlugin;

// ProxyCtrl states the shared ABI header does not name (reference §2.3).
constexpr EventState kProxyCtrlAppend = static_cast<EventState>(17);

// A ProxyOp carries at most this many steps in the model; bigger transfers get bigger steps.
constexpr uint64_t kMaxProxySteps = 1024;
// The proxy thread reports its own activity (ProxyCtrl) every this many GPU works.
constexpr uint64_t kProxyCtrlEvery = 8;

// Fake device addresses: plugins must never dereference them.
void* fakeDeviceAddress(int comm, int which) {
  return reinterpret_cast<void*>(uintptr_t{0x7f0000000000} + (uintptr_t(comm) << 28) + (uintptr_t(which) << 20));
}

}  // namespace

// What the proxy thread needs to report one task's GPU and network side.
struct RankPlayer::GpuWork {
  void* context = nullptr;
  void* task = nullptr;  // the Coll/P2p handle
  int mask = 0;
  int comm_rank = 0;
  int chunk_size = 0;
  uint64_t stop_sim_ns = 0;
  uint64_t transfer_ns = 0;
  std::vector<ChannelTimes> channels;
  std::vector<NetTransfer> net;
};

RankPlayer::RankPlayer(const Scenario& scenario, const Timeline& timeline, int rank, ProfilerHost& host, PlayOptions options)
    : s_(scenario), t_(timeline), rank_(rank), host_(host), options_(options), gpu_(scenario, timeline, rank) {}

RankPlayer::~RankPlayer() = default;

void* RankPlayer::commStream(int comm) const { return fakeDeviceAddress(comm, 0xff); }

void RankPlayer::paceTo(uint64_t sim_ns) const {
  if (options_.time_scale <= 0 || sim_ns <= first_sim_ns_) return;
  const auto real = std::chrono::nanoseconds(static_cast<int64_t>(static_cast<double>(sim_ns - first_sim_ns_) * options_.time_scale));
  std::this_thread::sleep_until(start_ + real);
}

void RankPlayer::die() const {
  std::this_thread::sleep_for(std::chrono::milliseconds(s_.killed_after_ms));
  raise(SIGKILL);
  _exit(137);  // not reached: SIGKILL cannot be caught
}

void RankPlayer::createComms(int generation) {
  for (int c : t_.commsOf(rank_, generation)) {
    const CommInstance& comm = t_.comms[c];
    CommState state;
    state.comm_rank = comm.commRankOf(rank_);
    state.profile = host_.initComm(comm.id, comm.name.c_str(), comm.n_nodes, static_cast<int>(comm.members.size()), state.comm_rank);
    comms_[c] = state;
  }
}

void RankPlayer::destroyComms() {
  // ncclCommDestroy waits for the proxy; graph replays finished before it.
  host_callback_.drain();
  proxy_.drain();
  for (auto& [index, state] : comms_) host_.finalizeComm(state.profile);
  comms_.clear();
}

PlayStats RankPlayer::play() {
  const auto& groups = t_.ranks[rank_].groups;
  int generation = 0;
  createComms(generation);
  // Flat out, the rank's CPU clock does not follow the model: its ranges would last
  // microseconds where the GPU's steps last milliseconds, and the report takes ranges for steps.
  NvtxRanges ranges(options_.time_scale > 0);
  // The play's clock starts once the communicators and NVTX are up: a slow start (a loaded
  // host) would otherwise leave the first steps to be played at once, to catch up.
  start_ = std::chrono::steady_clock::now();
  first_sim_ns_ = groups.empty() ? 0 : groups.front().issue_sim_ns;
  gpu_.pace(first_sim_ns_, options_.time_scale);
  int step = -1;
  for (const RankGroup& group : groups) {
    if (group.generation != generation) {
      destroyComms();
      generation = group.generation;
      createComms(generation);
    }
    paceTo(group.issue_sim_ns);
    if (rank_ == s_.killed_rank && group.step >= s_.killed_at_step) die();
    gpu_.computeUntil(group.issue_sim_ns);
    if (group.step != step) ranges.enterStep(s_.nvtx_step, step = group.step);
    if (group.nvtx != nullptr) ranges.pushAll(*group.nvtx);
    playGroup(group);
    if (group.nvtx != nullptr) ranges.popAll(*group.nvtx);
  }
  gpu_.computeAll();
  destroyComms();
  PlayStats out = stats_;
  out.kernel_ch_events = kernel_ch_.load();
  out.proxy_op_events = proxy_ops_.load();
  out.proxy_step_events = proxy_steps_.load();
  return out;
}

void RankPlayer::playGroup(const RankGroup& group) {
  ++stats_.groups;
  const ProfilerApi* api = host_.api();
  // The mask is snapshotted per operation at API time (2.26+); here, per group.
  const int mask = host_.mask();
  const bool api_events = api != nullptr && api->hasApiEvents();
  const CommState& first = comms_.at(group.calls.front().comm);

  void* group_api = nullptr;
  if (api_events && first.profile.profiled && (mask & kGroupApiFamily)) {
    Event e;
    e.type = kGroupApi;
    e.group_depth = group.depth;
    e.graph_captured = group.graph_captured;
    group_api = api->startEvent(first.profile.context, e);
  }
  if (group_api != nullptr) api->recordEventState(group_api, kGroupStartApiStop, nullptr);

  // An ungrouped call ends NCCL's implicit group inside the call (ncclEnqueueCheck ->
  // ncclGroupEndInternal), so its Coll/P2p start and stop before its CollApi/P2pApi stops.
  // In a user group, or when only recorded into a graph, the API returns first.
  const bool launched_inside_call = group.depth == 1 && !group.graph_captured;
  std::vector<void*> api_handles_to_stop;
  std::vector<Task> tasks;
  for (const RankCall& call : group.calls) {
    ++stats_.calls;
    const CommState& comm = comms_.at(call.comm);
    void* handle = nullptr;
    const bool coll = isCollective(call.api_func);
    if (api_events && comm.profile.profiled && (mask & (coll ? kCollApiFamily : kP2pApiFamily))) {
      Event e;
      e.type = coll ? kCollApi : kP2pApi;
      e.parent = group_api;
      e.func = funcName(call.api_func).data();
      e.count = call.count;
      e.datatype = call.datatype->descr_name.data();
      e.root = call.root;
      e.stream = commStream(call.comm);
      e.graph_captured = call.graph_captured;
      e.user_tag = call.user_tag;
      handle = api->startEvent(comm.profile.context, e);
    }
    if (handle != nullptr && launched_inside_call) api_handles_to_stop.push_back(handle);
    else if (handle != nullptr) api->stopEvent(handle);  // API return: enqueued, not completed
    if (call.has_task) tasks.push_back({&call, handle});
  }
  if (group_api != nullptr) api->recordEventState(group_api, kGroupEndApiStart, nullptr);

  // ncclGroupEnd launches one plan per communicator, in the order they were first used.
  std::vector<int> plan_comms;
  for (const Task& t : tasks)
    if (std::find(plan_comms.begin(), plan_comms.end(), t.call->comm) == plan_comms.end()) plan_comms.push_back(t.call->comm);
  for (int c : plan_comms) {
    std::vector<Task> plan;
    for (const Task& t : tasks)
      if (t.call->comm == c) plan.push_back(t);
    const CommState& comm = comms_.at(c);
    if (api_events && comm.profile.profiled && (mask & kKernelLaunch)) {  // no descendants
      Event e;
      e.type = kKernelLaunch;
      e.parent = group_api;
      e.stream = commStream(c);
      if (void* launch = api->startEvent(comm.profile.context, e)) api->stopEvent(launch);  // captured: "recorded"
    }
    if (group.graph_captured) {
      // Graph replay: hostStreamPlanTask runs in a cudaLaunchHostFunc callback.
      host_callback_.post([this, &group, plan, mask] { launchPlan(group, plan, mask); });
    } else {
      launchPlan(group, plan, mask);
    }
  }
  for (void* handle : api_handles_to_stop) api->stopEvent(handle);
  if (group_api != nullptr) api->stopEvent(group_api);
  // Replay the graph before the next group, so op order per communicator stays program order.
  if (group.graph_captured) host_callback_.drain();
}

void RankPlayer::launchPlan(const RankGroup& group, const std::vector<Task>& plan, int mask) {
  CommState& comm = comms_.at(plan.front().call->comm);
  const ProfilerApi* api = host_.api();
  bool network = false;
  for (const Task& t : plan) network |= !t.call->net.empty();
  // A captured plan gets a host callback only when it has proxy work: network peers or
  // KernelCh (issue #1805). Without one, no Group/Coll/P2p event ever fires.
  const bool callback = !group.graph_captured || network || (mask & kKernelCh);
  const bool profiled = api != nullptr && comm.profile.profiled && callback;

  void* group_handle = nullptr;
  if (profiled && (mask & kGroupFamily)) group_handle = api->startEvent(comm.profile.context, Event{.type = kGroup});
  std::vector<void*> handles;
  for (const Task& t : plan) handles.push_back(startTask(comm, t, group_handle, mask, profiled, group.graph_captured));
  std::vector<const RankCall*> launched;
  for (const Task& t : plan) launched.push_back(t.call);
  gpu_.ncclKernel(launched);
  // ncclProfilerStopTaskEvents: stop means "handed to the proxy", not completed.
  for (void* h : handles)
    if (h != nullptr) api->stopEvent(h);
  if (group_handle != nullptr) api->stopEvent(group_handle);
  if (mask & kTaskChildren) postGpuWork(comm, plan, handles, mask);
}

void* RankPlayer::startTask(CommState& comm, const Task& t, void* group_handle, int mask, bool profiled, bool captured) {
  const ProfilerApi* api = host_.api();
  const RankCall& call = *t.call;
  Event e;
  e.parent = api != nullptr && api->hasApiEvents() ? t.api_handle : group_handle;  // v4 (2.27): the Group
  e.parent_group = group_handle;
  e.rank = comm.comm_rank;
  e.func = funcName(call.task_func).data();
  e.count = call.count;
  e.datatype = call.datatype->descr_name.data();
  e.n_channels = call.n_channels;
  e.user_tag = call.user_tag;
  if (!isCollective(call.task_func)) {
    if (!profiled || !(mask & kP2pFamily)) return nullptr;
    e.type = kP2p;
    e.recv_buff = fakeDeviceAddress(call.comm, 3);
    e.peer = call.peer;
    ++stats_.p2p_events;
    return api->startEvent(comm.profile.context, e);
  }
  uint64_t& seq = comm.seq[static_cast<int>(call.task_func)];
  void* handle = nullptr;
  if (profiled && (mask & kCollFamily)) {
    e.type = kColl;
    e.seq_number = seq;
    e.send_buff = fakeDeviceAddress(call.comm, 1);
    e.recv_buff = fakeDeviceAddress(call.comm, 2);
    e.root = call.root;
    // NCCL rewrites AllGather and Broadcast tasks to bytes of ncclInt8.
    if (call.task_func == Func::kAllGather || call.task_func == Func::kBroadcast) {
      e.count = call.count * call.datatype->size;
      e.datatype = nccl::kDatatypes[0].descr_name.data();  // ncclInt8
    }
    e.n_warps = call.n_warps;
    e.algo = call.algo;
    e.proto = call.proto;
    handle = api->startEvent(comm.profile.context, e);
    ++stats_.coll_events;
  }
  // seqNumber moves even without a plugin (RAS uses it), but skips graph-captured
  // collectives unless KernelCh forces proxy events and the Group or CollApi was tracked.
  if (!captured || ((group_handle != nullptr || t.api_handle != nullptr) && (mask & kKernelCh))) ++seq;
  return handle;
}

void RankPlayer::postGpuWork(const CommState& comm, const std::vector<Task>& plan, const std::vector<void*>& handles, int mask) {
  std::vector<size_t> order(plan.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // The proxy sees kernels finish in GPU completion order.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return plan[a].call->stop_sim_ns < plan[b].call->stop_sim_ns; });
  for (size_t i : order) {
    if (handles[i] == nullptr) continue;  // untracked: NCCL emits no children
    const RankCall& call = *plan[i].call;
    GpuWork work{comm.profile.context, handles[i], mask, comm.comm_rank, call.chunk_size, call.stop_sim_ns, call.transfer_ns, call.channels, call.net};
    proxy_.post([this, work = std::move(work)] { runGpuWork(work); });
  }
}

// With proxy events, each channel's network steps are played over its share of the call's
// transfer time (paced when playing in real time, so that the plugin's own clock times them);
// its kernel stops when its steps are done. Without, the proxy reports at the GPU stop.
void RankPlayer::runGpuWork(const GpuWork& work) {
  const ProfilerApi* api = host_.api();
  const bool steps_played = (work.mask & kProxyOpFamily) && !work.net.empty();
  paceTo(steps_played ? work.stop_sim_ns - std::min(work.transfer_ns, work.stop_sim_ns) : work.stop_sim_ns);
  if (gpu_works_.fetch_add(1, std::memory_order_relaxed) % kProxyCtrlEvery == 0)
    emitProxyCtrl(work.context, static_cast<int>(work.net.size() * work.channels.size()));
  for (size_t c = 0; c < work.channels.size(); ++c) {
    void* channel = nullptr;
    if (work.mask & kKernelCh) {
      Event e;
      e.type = kKernelCh;
      e.parent = work.task;
      e.channel_id = static_cast<uint8_t>(c);
      e.p_timer = work.channels[c].start_ptimer;
      channel = api->startEvent(work.context, e);
      kernel_ch_.fetch_add(1, std::memory_order_relaxed);
    }
    if (steps_played) emitProxyOps(work, static_cast<int>(c));
    if (channel != nullptr) {
      StateArgs args{};
      args.kernel_ch.p_timer = work.channels[c].stop_ptimer;
      api->recordEventState(channel, kKernelChStop, &args);
      api->stopEvent(channel);
    }
  }
}

// One ProxyOp per transfer on this channel, its steps spread evenly over the channel's share
// of the transfer time, the transfers' steps interleaved in time as a proxy thread
// progresses them. A send step waits for its GPU data, for the peer's credit, then for the
// wire: its last state begins when its share of the link's own time (wire_ns) is left, so a
// slow link's sender spends its steps on the wire and the others wait for credit. A receive
// waits for the data, then flushes it and hands it to the GPU at once.
void RankPlayer::emitProxyOps(const GpuWork& work, int channel) {
  const ProfilerApi* api = host_.api();
  const uint64_t n_channels = work.channels.size(), chunk = static_cast<uint64_t>(work.chunk_size);
  const uint64_t share = std::min(work.transfer_ns, work.stop_sim_ns) / n_channels;
  const uint64_t window = work.stop_sim_ns - share * (n_channels - static_cast<uint64_t>(channel));
  struct Step {
    void* op;
    size_t transfer;
    uint64_t index, bytes, times[4];  // start (first state), second state, third state, stop
    void* handle = nullptr;
  };
  std::vector<Step> steps;
  std::vector<void*> ops(work.net.size(), nullptr);
  for (size_t t = 0; t < work.net.size(); ++t) {
    const NetTransfer& transfer = work.net[t];
    const uint64_t bytes = transfer.bytes / n_channels + (static_cast<uint64_t>(channel) < transfer.bytes % n_channels ? 1 : 0);
    if (bytes == 0) continue;
    const uint64_t n = std::clamp<uint64_t>((bytes + chunk - 1) / chunk, 1, kMaxProxySteps);
    Event e;
    e.type = kProxyOp;
    e.parent = work.task;
    e.rank = work.comm_rank;
    e.pid = static_cast<int32_t>(getpid());
    e.channel_id = static_cast<uint8_t>(channel);
    e.peer = transfer.peer_comm_rank;
    e.n_steps = static_cast<int>(n);
    e.chunk_size = work.chunk_size;
    e.is_send = transfer.is_send ? 1 : 0;
    ops[t] = api->startEvent(work.context, e);
    proxy_ops_.fetch_add(1, std::memory_order_relaxed);
    if (ops[t] == nullptr) continue;
    StateArgs none{};
    api->recordEventState(ops[t], kProxyOpInProgress, &none);
    if (!(work.mask & kProxyStepFamily)) continue;
    const uint64_t slot = share / n, wire = std::min(slot, transfer.wire_ns / n_channels / n);
    for (uint64_t k = 0; k < n; ++k) {
      // Equal steps, the remainder on the first ones: the steps' sizes add up to the bytes.
      const uint64_t begin = window + k * slot, end = begin + slot;
      Step step{ops[t], t, k, bytes / n + (k < bytes % n ? 1 : 0), {begin, begin, end - wire, end}};
      if (!transfer.is_send) step.times[1] = step.times[2] = end;  // the data arrived: flush, hand over
      steps.push_back(step);
    }
  }
  // Every state change of the channel's steps in time order (a step's own in its order).
  std::vector<std::pair<uint64_t, size_t>> changes;  // (sim time, step * 4 + change)
  for (size_t i = 0; i < steps.size(); ++i)
    for (size_t k = 0; k < 4; ++k) changes.emplace_back(steps[i].times[k], i * 4 + k);
  std::stable_sort(changes.begin(), changes.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  static constexpr EventState kSendStates[] = {kProxyStepSendGpuWait, kProxyStepSendPeerWait, kProxyStepSendWait};
  static constexpr EventState kRecvStates[] = {kProxyStepRecvWait, kProxyStepRecvFlushWait, kProxyStepRecvGpuWait};
  for (const auto& [when, change] : changes) {
    Step& step = steps[change / 4];
    const size_t k = change % 4;
    paceTo(when);
    if (k == 0) {
      Event s;
      s.type = kProxyStep;
      s.parent = step.op;
      s.rank = work.comm_rank;
      s.step = static_cast<int>(step.index);
      step.handle = api->startEvent(work.context, s);
      proxy_steps_.fetch_add(1, std::memory_order_relaxed);
    }
    if (step.handle == nullptr) continue;
    if (k == 3) {
      api->stopEvent(step.handle);
      continue;
    }
    StateArgs args{};
    args.proxy_step.trans_size = step.bytes;
    api->recordEventState(step.handle, (work.net[step.transfer].is_send ? kSendStates : kRecvStates)[k], &args);
  }
  for (void* op : ops)
    if (op != nullptr) api->stopEvent(op);
}

void RankPlayer::emitProxyCtrl(void* context, int appended) const {
  const ProfilerApi* api = host_.api();
  // ProxyCtrl follows the live mask, not the op's snapshot.
  if (!(host_.mask() & kProxyCtrl)) return;
  void* ctrl = api->startEvent(context, Event{.type = kProxyCtrl});
  if (ctrl == nullptr) return;
  StateArgs args{};
  args.proxy_ctrl.appended_proxy_ops = appended;
  api->recordEventState(ctrl, kProxyCtrlAppend, &args);
  api->recordEventState(ctrl, kProxyCtrlAppendEnd, &args);
  api->stopEvent(ctrl);
}

}  // namespace commtrace::driver
