// A stand-in NCCL profiler plugin for the driver's tests: it logs every call it receives,
// one line each, to $FAKE_PROFILER_LOG_DIR/fake-<pid>.log (appended, so the log survives
// dlclose and reload), and never dereferences a handle. Built several times with different
// exports (FAKE_EXPORT_V4..V7) and names.
//
// Settings, read at each init:
//   FAKE_PROFILER_MASK        the activation mask init writes (default 4095: everything in v5)
//   FAKE_PROFILER_INIT_FAIL   a comm name whose init fails, or "*" for every comm
//   FAKE_PROFILER_NULL_TYPES  event-type bits for which startEvent writes a NULL handle
//
// Line formats (fields are space-separated key=value; strings have no spaces):
//   init v=V tid=T ctx=C comm_id=N name=S n_nodes=N n_ranks=N rank=N mask_ptr=P env_RANK=S ...
//   start v=V tid=T ctx=C handle=H type=N parent=P func=S datatype=S algo=S proto=S descr=HEX
//   state v=V tid=T handle=H state=N args=HEX|null
//   stop v=V tid=T handle=H
//   finalize v=V tid=T ctx=C
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "nccl-plugin/profiler_abi.h"

namespace {

using namespace commtrace::nccl;

std::mutex g_mutex;
std::atomic<uintptr_t> g_next_handle{0x10000};
std::atomic<int> g_null_types{0};

long tid() { return static_cast<long>(syscall(SYS_gettid)); }

void logLine(const std::string& line) {
  const char* dir = std::getenv("FAKE_PROFILER_LOG_DIR");
  if (dir == nullptr) return;
  const std::string path = std::string(dir) + "/fake-" + std::to_string(getpid()) + ".log";
  std::lock_guard lock(g_mutex);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return;
  const std::string text = line + "\n";
  if (write(fd, text.data(), text.size()) < 0) {
  }
  close(fd);
}

std::string hexBytes(const void* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char b = static_cast<const unsigned char*>(p)[i];
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

std::string ptr(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

std::string str(const char* s) { return s == nullptr ? "(null)" : *s == '\0' ? "(empty)" : s; }

// The strings a descriptor points at, found by what its union has (as the driver does).
template <class D>
void describeStrings(const D& d, uint64_t type, std::string& out) {
  const auto& u = d.u;
  const char *func = nullptr, *datatype = nullptr, *algo = nullptr, *proto = nullptr;
  if (type == kColl) {
    const CollV4* c;
    if constexpr (requires { u.coll.v5.v4; }) c = &u.coll.v5.v4;
    else if constexpr (requires { u.coll.v4; }) c = &u.coll.v4;
    else c = &u.coll;
    func = c->func, datatype = c->datatype, algo = c->algo, proto = c->proto;
  } else if (type == kP2p) {
    const P2pV4* p;
    if constexpr (requires { u.p2p.v5.v4; }) p = &u.p2p.v5.v4;
    else if constexpr (requires { u.p2p.v4; }) p = &u.p2p.v4;
    else p = &u.p2p;
    func = p->func, datatype = p->datatype;
  }
  if constexpr (requires { u.coll_api; }) {
    if (type == kCollApi) {
      const CollApiV5* c;
      if constexpr (requires { u.coll_api.v5; }) c = &u.coll_api.v5;
      else c = &u.coll_api;
      func = c->func, datatype = c->datatype;
    } else if (type == kP2pApi) {
      const P2pApiV5* p;
      if constexpr (requires { u.p2p_api.v5; }) p = &u.p2p_api.v5;
      else p = &u.p2p_api;
      func = p->func, datatype = p->datatype;
    }
  }
  out += " func=" + str(func) + " datatype=" + str(datatype) + " algo=" + str(algo) + " proto=" + str(proto);
}

// What the process was started with, so tests can check the launcher's environment.
std::string envFields() {
  std::string out;
  for (const char* name : {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK", "NCCL_HOSTID",
                           "NCCL_PROFILER_PLUGIN", "COMMTRACE_DIR"}) {
    const char* v = std::getenv(name);
    out += std::string(" env_") + name + "=" + str(v);
  }
  return out;
}

template <int V, class Descr>
struct Fake {
  static Result initCommon(void** context, uint64_t comm_id, int* mask, const char* name, int n_nodes, int n_ranks, int rank,
                           DebugLogger logger) {
    static std::atomic<uintptr_t> next_context{0xC0000};
    *context = reinterpret_cast<void*>(next_context.fetch_add(16));
    const char* mask_env = std::getenv("FAKE_PROFILER_MASK");
    *mask = mask_env != nullptr ? std::atoi(mask_env) : 4095;
    const char* null_env = std::getenv("FAKE_PROFILER_NULL_TYPES");
    g_null_types.store(null_env != nullptr ? std::atoi(null_env) : 0);
    logLine("init v=" + std::to_string(V) + " tid=" + std::to_string(tid()) + " ctx=" + ptr(*context) +
            " comm_id=" + std::to_string(comm_id) + " name=" + str(name) + " n_nodes=" + std::to_string(n_nodes) +
            " n_ranks=" + std::to_string(n_ranks) + " rank=" + std::to_string(rank) + " mask_ptr=" + ptr(mask) +
            envFields());
    if (logger != nullptr) logger(kLogInfo, kLogSubsysProfile, __FILE__, __LINE__, "fake profiler v%d: init comm %s", V, str(name).c_str());
    const char* fail = std::getenv("FAKE_PROFILER_INIT_FAIL");
    if (fail != nullptr && (std::strcmp(fail, "*") == 0 || (name != nullptr && std::strcmp(fail, name) == 0))) return kInternalError;
    return kSuccess;
  }
  static Result initV4(void** context, int* mask, const char* name, uint64_t hash, int n_nodes, int n_ranks, int rank,
                       DebugLogger logger) {
    return initCommon(context, hash, mask, name, n_nodes, n_ranks, rank, logger);
  }
  static Result initV5(void** context, uint64_t comm_id, int* mask, const char* name, int n_nodes, int n_ranks, int rank,
                       DebugLogger logger) {
    return initCommon(context, comm_id, mask, name, n_nodes, n_ranks, rank, logger);
  }
  static Result startEvent(void* context, void** handle, Descr* d) {
    const uint64_t type = d->type;
    *handle = (type & static_cast<uint64_t>(g_null_types.load())) ? nullptr : reinterpret_cast<void*>(g_next_handle.fetch_add(16));
    std::string line = "start v=" + std::to_string(V) + " tid=" + std::to_string(tid()) + " ctx=" + ptr(context) +
                       " handle=" + ptr(*handle) + " type=" + std::to_string(type) + " parent=" + ptr(d->parent_obj);
    describeStrings(*d, type, line);
    line += " descr=" + hexBytes(d, sizeof *d);
    logLine(line);
    return kSuccess;
  }
  static Result stopEvent(void* handle) {
    logLine("stop v=" + std::to_string(V) + " tid=" + std::to_string(tid()) + " handle=" + ptr(handle));
    return kSuccess;
  }
  static Result recordEventState(void* handle, EventState state, StateArgs* args) {
    logLine("state v=" + std::to_string(V) + " tid=" + std::to_string(tid()) + " handle=" + ptr(handle) +
            " state=" + std::to_string(static_cast<int>(state)) + " args=" + (args ? hexBytes(args, sizeof *args) : "null"));
    return kSuccess;
  }
  static Result finalize(void* context) {
    logLine("finalize v=" + std::to_string(V) + " tid=" + std::to_string(tid()) + " ctx=" + ptr(context));
    return kSuccess;
  }
};

}  // namespace

#define FAKE_TABLE(V, Table, Descr, InitFn) \
  extern "C" __attribute__((visibility("default"))) const Table ncclProfiler_v##V = { \
      FAKE_NAME, &Fake<V, Descr>::InitFn, &Fake<V, Descr>::startEvent, &Fake<V, Descr>::stopEvent, \
      &Fake<V, Descr>::recordEventState, &Fake<V, Descr>::finalize};

#ifdef FAKE_EXPORT_V7
FAKE_TABLE(7, ProfilerV7, EventDescrV7, initV5)
#endif
#ifdef FAKE_EXPORT_V6
FAKE_TABLE(6, ProfilerV6, EventDescrV6, initV5)
#endif
#ifdef FAKE_EXPORT_V5
FAKE_TABLE(5, ProfilerV5, EventDescrV5, initV5)
#endif
#ifdef FAKE_EXPORT_V4
FAKE_TABLE(4, ProfilerV4, EventDescrV4, initV4)
#endif
