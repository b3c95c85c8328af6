#include "tools/nccl-driver/plugin_binding.h"

#include <dlfcn.h>
#include <strings.h>

#include <cstring>
#include <type_traits>

namespace commtrace::driver {
namespace {

using namespace commtrace::nccl;

// NCCL 2.27 builds v4 descriptors on the stack without zeroing them, and 2.28+'s v4 adapter
// never copies p2p.nChannels: a v4 plugin sees stack garbage in every field NCCL does not
// set. We fill this byte first so a plugin that reads such a field reads visible junk.
constexpr unsigned char kStackGarbage = 0xA5;

template <class U>
void fillColl(U& u, const Event& e) {
  CollV4& c = core(u.coll);
  c.seq_number = e.seq_number;
  c.func = e.func;
  c.send_buff = e.send_buff;
  c.recv_buff = e.recv_buff;
  c.count = e.count;
  c.root = e.root;
  c.datatype = e.datatype;
  c.n_channels = e.n_channels;
  c.n_warps = e.n_warps;
  c.algo = e.algo;
  c.proto = e.proto;
  if constexpr (requires { u.coll.v5.parent_group; }) u.coll.v5.parent_group = e.parent_group;
  else if constexpr (requires { u.coll.parent_group; }) u.coll.parent_group = e.parent_group;
  if constexpr (requires { u.coll.user_tag; }) {
    u.coll.kernel_variant = nullptr;  // symmetric kernels only
    u.coll.is_sym_coll = false;
    u.coll.user_tag = e.user_tag;
  }
}

template <class U>
void fillP2p(U& u, const Event& e) {
  P2pV4& p = core(u.p2p);
  p.func = e.func;
  p.buff = e.recv_buff;
  p.datatype = e.datatype;
  p.count = e.count;
  p.peer = e.peer;
  if constexpr (requires { u.p2p.v5.parent_group; }) {
    p.n_channels = e.n_channels;
    u.p2p.v5.parent_group = e.parent_group;
  } else if constexpr (requires { u.p2p.parent_group; }) {
    p.n_channels = e.n_channels;
    u.p2p.parent_group = e.parent_group;
  }  // v4: n_channels left as garbage, as NCCL leaves it
  if constexpr (requires { u.p2p.user_tag; }) u.p2p.user_tag = e.user_tag;
}

// The API events exist from v5 on; a v4 union has none of these members.
template <class U>
void fillApi(U& u, const Event& e) {
  if constexpr (requires { u.group_api; }) {
    switch (e.type) {
      case kGroupApi:
        u.group_api.graph_captured = e.graph_captured;
        u.group_api.group_depth = e.group_depth;
        break;
      case kCollApi: {
        CollApiV5& c = core(u.coll_api);
        c.func = e.func;
        c.count = e.count;
        c.datatype = e.datatype;
        c.root = e.root;
        c.stream = e.stream;
        c.graph_captured = e.graph_captured;
        if constexpr (requires { u.coll_api.user_tag; }) u.coll_api.user_tag = e.user_tag;
        break;
      }
      case kP2pApi: {
        P2pApiV5& p = core(u.p2p_api);
        p.func = e.func;
        p.count = e.count;
        p.datatype = e.datatype;
        p.stream = e.stream;
        p.graph_captured = e.graph_captured;
        if constexpr (requires { u.p2p_api.user_tag; }) u.p2p_api.user_tag = e.user_tag;
        break;
      }
      case kKernelLaunch:
        u.kernel_launch.stream = e.stream;
        break;
      default:
        break;
    }
  }
}

template <class Descr>
void fillDescriptor(Descr& d, const Event& e) {
  d.type = static_cast<decltype(d.type)>(e.type);  // uint8_t in v4, uint64_t from v5
  d.parent_obj = e.parent;
  d.rank = e.rank;
  auto& u = d.u;
  switch (e.type) {
    case kColl:
      fillColl(u, e);
      break;
    case kP2p:
      fillP2p(u, e);
      break;
    case kProxyOp:
      u.proxy_op.pid = e.pid;
      u.proxy_op.channel_id = e.channel_id;
      u.proxy_op.peer = e.peer;
      u.proxy_op.n_steps = e.n_steps;
      u.proxy_op.chunk_size = e.chunk_size;
      u.proxy_op.is_send = e.is_send;
      break;
    case kProxyStep:
      u.proxy_step.step = e.step;
      break;
    case kKernelCh:
      u.kernel_ch.channel_id = e.channel_id;
      u.kernel_ch.p_timer = e.p_timer;
      break;
    case kGroup:
    case kProxyCtrl:
      break;  // the header is all there is
    default:
      fillApi(u, e);
      break;
  }
}

// One implementation for every version, parameterised by its init signature, its table's
// descriptor and the descriptor actually built (Wire: Descr, or a smaller older one).
template <int V, class Init, class Descr, class Wire = Descr>
class BoundApi final : public ProfilerApi {
  using Table = ProfilerTable<Init, Descr>;

 public:
  explicit BoundApi(const void* table) : t_(static_cast<const Table*>(table)) {}
  int version() const override { return V; }
  const char* name() const override { return t_->name != nullptr ? t_->name : "(unnamed)"; }

  Result init(void** context, uint64_t comm_id, int* mask, const char* comm_name, int n_nodes, int n_ranks, int rank,
              DebugLogger logger) const override {
    if constexpr (V == 4) return t_->init(context, mask, comm_name, comm_id, n_nodes, n_ranks, rank, logger);
    else return t_->init(context, comm_id, mask, comm_name, n_nodes, n_ranks, rank, logger);
  }

  void* startEvent(void* context, const Event& e, Result* result) const override {
    // On the stack, as in NCCL; v5+ zeroes it ("= {0}"), v4 does not. A v6 descriptor under
    // the v7 name stands for another layout: what v6 leaves unset is that layout's data,
    // here junk, so a plugin reading v7 fields from it reads visible junk.
    Wire descr;
    constexpr bool kForeign = V == 4 || !std::is_same_v<Wire, Descr>;
    std::memset(static_cast<void*>(&descr), kForeign ? kStackGarbage : 0, sizeof descr);
    fillDescriptor(descr, e);
    void* handle = nullptr;
    const Result r = t_->start_event(context, &handle, reinterpret_cast<Descr*>(&descr));
    if (result != nullptr) *result = r;
    return handle;
  }
  Result stopEvent(void* handle) const override { return t_->stop_event(handle); }
  Result recordEventState(void* handle, EventState state, StateArgs* args) const override {
    return t_->record_event_state(handle, state, args);
  }
  Result finalize(void* context) const override { return t_->finalize(context); }

 private:
  const Table* t_;
};

}  // namespace

std::unique_ptr<ProfilerApi> bindProfiler(int version, const void* table, bool v6_descriptors_as_v7) {
  switch (version) {
    case 7:
      if (v6_descriptors_as_v7) return std::make_unique<BoundApi<7, InitV5, EventDescrV7, EventDescrV6>>(table);
      return std::make_unique<BoundApi<7, InitV5, EventDescrV7>>(table);
    case 6: return std::make_unique<BoundApi<6, InitV5, EventDescrV6>>(table);
    case 5: return std::make_unique<BoundApi<5, InitV5, EventDescrV5>>(table);
    case 4: return std::make_unique<BoundApi<4, InitV4, EventDescrV4>>(table);
  }
  return nullptr;
}

namespace {

std::string dlError() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown dlopen error";
}

bool startsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
bool endsWith(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

}  // namespace

PluginLibrary::PluginLibrary(void* handle, std::string opened_as, std::unique_ptr<ProfilerApi> api)
    : handle_(handle), opened_as_(std::move(opened_as)), api_(std::move(api)) {}

PluginLibrary::~PluginLibrary() {
  api_.reset();
  dlclose(handle_);
}

PluginLibrary::Opened PluginLibrary::open(const char* plugin_env, int forced_version, bool v6_descriptors_as_v7) {
  Opened out;
  const std::string value = plugin_env != nullptr ? plugin_env : "";
  if (plugin_env != nullptr && strcasecmp(plugin_env, "none") == 0) {
    out.status = Status::kDisabled;
    out.message = "commtrace: NCCL_PROFILER_PLUGIN=none: running without a profiler plugin";
    return out;
  }

  void* handle = nullptr;
  std::string opened_as;
  std::string tried;  // "name: dlerror" for each failed attempt
  const auto attempt = [&](const std::string& name) {
    handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) opened_as = name;
    else tried += (tried.empty() ? "" : "; ") + dlError();
  };
  if (value.empty()) {
    attempt("libnccl-profiler.so");  // unset: NCCL's default name
  } else if (strncasecmp(value.c_str(), "STATIC_PLUGIN", value.size()) == 0) {
    // NCCL compares only strlen(value) characters, so any prefix ("static") matches. The
    // symbols then come from the global scope: the executable and LD_PRELOADed libraries.
    handle = dlopen(nullptr, RTLD_NOW | RTLD_LOCAL);
    opened_as = "STATIC_PLUGIN";
  } else {
    attempt(value);
    // 2.26+: a bare name that is not itself a library name is expanded.
    if (handle == nullptr && value.find('/') == std::string::npos && !(startsWith(value, "lib") && endsWith(value, ".so")))
      attempt("libnccl-profiler-" + value + ".so");
  }
  if (handle == nullptr) {
    out.message = "commtrace: cannot open profiler plugin '" + (value.empty() ? "libnccl-profiler.so" : value) + "': " + tried;
    return out;
  }

  std::unique_ptr<ProfilerApi> api;
  std::string looked_up;
  for (int version = 7; version >= 4 && api == nullptr; --version) {
    if (forced_version != 0 && version != forced_version) continue;
    const std::string symbol = "ncclProfiler_v" + std::to_string(version);
    looked_up += (looked_up.empty() ? "" : ", ") + symbol;
    if (void* table = dlsym(handle, symbol.c_str())) api = bindProfiler(version, table, v6_descriptors_as_v7);
  }
  if (api == nullptr) {
    dlclose(handle);
    out.message = "commtrace: profiler plugin '" + opened_as + "' exports none of " + looked_up +
                  " (NCCL: \"External profiler plugin " + opened_as + " is unsupported\")";
    return out;
  }
  out.library.reset(new PluginLibrary(handle, std::move(opened_as), std::move(api)));
  out.status = Status::kLoaded;
  return out;
}

}  // namespace commtrace::driver
