#include "cupti/nvtx_face.h"

#define NVTX_NO_IMPL  // a tool: the types and the injection interface, not NVTX's own calls
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>

#include <atomic>
#include <cstring>
#include <cwchar>
#include <new>

#include "core/clock.h"
#include "core/export.h"
#include "core/fold_digits.h"
#include "core/phase_path.h"
#include "core/record.h"
#include "core/settings.h"
#include "core/string_table.h"
#include "ringbuffer/ringbuffer.h"

namespace commtrace::nvtx {
namespace {

std::atomic<uint64_t> g_too_deep{0}, g_table_full{0}, g_unknown_end{0};

// --- names ---------------------------------------------------------------------------

// A wide string as UTF-8, cut at what fits: NVTX's W calls are rare (Windows-style code).
StringId internWide(const wchar_t* text) {
  char utf8[256];
  size_t n = 0;
  for (; text != nullptr && *text != L'\0'; ++text) {
    const uint32_t c = static_cast<uint32_t>(*text);
    const size_t width = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    if (n + width >= sizeof utf8) break;
    if (width == 1) {
      utf8[n++] = static_cast<char>(c);
      continue;
    }
    static constexpr uint8_t kLead[] = {0, 0, 0xc0, 0xe0, 0xf0};
    utf8[n++] = static_cast<char>(kLead[width] | (c >> (6 * (width - 1))));
    for (size_t k = width - 1; k > 0; --k) utf8[n++] = static_cast<char>(0x80 | ((c >> (6 * (k - 1))) & 0x3f));
  }
  utf8[n] = '\0';
  return StringTable::global().intern(utf8);
}

StringId internAscii(const char* text) { return StringTable::global().intern(text != nullptr ? text : ""); }

// Our handles are string ids (never 0 for a non-empty name), so a registered string or a
// domain needs no table of its own.
template <class Handle>
Handle handleOf(StringId id) {
  return reinterpret_cast<Handle>(static_cast<uintptr_t>(id));
}
StringId idOf(const void* handle) { return static_cast<StringId>(reinterpret_cast<uintptr_t>(handle)); }

StringId messageOf(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return 0;
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return internAscii(a->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE: return internWide(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED: return idOf(a->message.registered);
    default: return 0;
  }
}

uint32_t categoryOf(const nvtxEventAttributes_t* a) { return a != nullptr ? a->category : 0; }

// --- push/pop: a stack per thread and domain -------------------------------------------

// NVTX nests push/pop ranges per domain: NCCL's API ranges (its "NCCL" domain) and the
// program's (the default domain) interleave on one thread without closing each other's. It
// matters: on an H100 with NCCL 2.28.9 no pop came for NCCL's ncclCommInitRankConfig range,
// and with one stack for all domains PyTorch's next pop closed NCCL's range instead of its
// own train_step, which stayed open, leaving every later step one level deeper than it was.

struct OpenRange {
  uint64_t start_ns;
  StringId name;
  uint32_t category;
  uint32_t outer_path;  // the thread's path before this range opened: what its pop restores
};

struct DomainStack {
  StringId domain;
  uint32_t depth;  // may exceed kMaxDepth: those levels are counted, not kept
  OpenRange open[kMaxDepth];
};

// The path nodes this thread has met (PhasePathRecord), direct-mapped by (parent, name): a
// hit is the node's id, a miss hands out a new id and writes its record. A program's
// structure (layers, forward/backward, emit_nvtx's op ranges under them) fits in 8,192
// (128 KB a thread that pushes ranges); where it does not, a node evicted and met again gets
// another id and record, which readers treat alike.
struct PathNode {
  uint32_t parent;
  StringId name;
  StringId domain;
  uint32_t id;  // 0: empty
};
constexpr uint32_t kPathCache = 8192;

struct ThreadStack {
  uint32_t domains = 0;  // stacks in use, in the order the thread first pushed in their domain
  DomainStack stacks[kDomainsPerThread];
  PathNode paths[kPathCache] = {};
};

constinit thread_local ThreadStack* tl_stack __attribute__((tls_model("initial-exec"))) = nullptr;
pthread_key_t g_stack_key;
pthread_once_t g_stack_key_once = PTHREAD_ONCE_INIT;

// A thread's first push allocates its stacks (its only allocation); the key frees them when
// the thread exits. Ranges still open then are not recorded.
ThreadStack* threadStack() {
  if (tl_stack != nullptr) return tl_stack;
  pthread_once(&g_stack_key_once, [] { pthread_key_create(&g_stack_key, [](void* s) { delete static_cast<ThreadStack*>(s); }); });
  tl_stack = new (std::nothrow) ThreadStack();
  if (tl_stack != nullptr) pthread_setspecific(g_stack_key, tl_stack);
  return tl_stack;
}

// The thread's stack for a domain; a push opens one when the thread has a free one.
DomainStack* domainStack(ThreadStack* s, StringId domain, bool open) {
  if (s == nullptr) return nullptr;
  for (uint32_t k = 0; k < s->domains; ++k)
    if (s->stacks[k].domain == domain) return &s->stacks[k];
  if (!open || s->domains == kDomainsPerThread) return nullptr;
  DomainStack* d = &s->stacks[s->domains++];
  d->domain = domain;
  d->depth = 0;
  return d;
}

// --- the path ops are issued under ----------------------------------------------------

std::atomic<uint32_t> g_next_path{0};
constinit std::atomic<StringId> g_nccl_domain{0};

// NCCL's own ranges (its API calls, in its "NCCL" domain) say which call, not where in the
// program: the ops issued inside them keep the program's path.
bool isNcclDomain(StringId domain) { return domain != 0 && domain == internOnce(g_nccl_domain, "NCCL"); }

// A top-level range's name with each run of digits folded to '#' ("train_step 12" is
// "train_step #"): the steps share one node, so the tree does not grow with them. The name
// itself when it has no digit.
StringId foldedTopName(StringId name) {
  const std::string_view text = StringTable::global().lookup(name);
  char folded[StringTable::kMaxLength + 1];
  const std::string_view key(folded, foldDigitRuns(text.substr(0, sizeof folded), folded));
  return key != text ? StringTable::global().intern(key) : name;
}

PathNode& pathSlot(ThreadStack& s, uint32_t parent, StringId name) {
  return s.paths[(parent * 0x9E3779B1u ^ name * 0x85EBCA77u) % kPathCache];
}

bool isNode(const PathNode& node, uint32_t parent, StringId name, StringId domain) {
  return node.id != 0 && node.parent == parent && node.name == name && node.domain == domain;
}

// The id of the path `name` opens inside `parent`: the thread's node when it has met it,
// else a new one, recorded for the reader. A top-level name is looked up as given first, so
// that only a name with digits (a new step's) pays for folding.
uint32_t pathInside(ThreadStack& s, uint32_t parent, StringId name, StringId domain) {
  if (const PathNode& given = pathSlot(s, parent, name); isNode(given, parent, name, domain)) return given.id;
  if (parent == 0) name = foldedTopName(name);
  PathNode& node = pathSlot(s, parent, name);
  if (isNode(node, parent, name, domain)) return node.id;
  const uint32_t id = g_next_path.fetch_add(1, std::memory_order_relaxed) + 1;
  record(PhasePathRecord{.id = id, .parent = parent, .name = name, .domain = domain});
  node = {parent, name, domain, id};
  return id;
}

int push(StringId domain, StringId name, uint32_t category) {
  ThreadStack* s = threadStack();
  DomainStack* d = domainStack(s, domain, true);
  if (d == nullptr) {
    g_too_deep.fetch_add(1, std::memory_order_relaxed);
    return -1;
  }
  const uint32_t level = d->depth++;
  if (level >= kMaxDepth) {
    g_too_deep.fetch_add(1, std::memory_order_relaxed);
    return static_cast<int>(level);
  }
  d->open[level] = {nowNs(), name, category, tl_phase_path};
  if (!isNcclDomain(domain)) tl_phase_path = pathInside(*s, tl_phase_path, name, domain);
  return static_cast<int>(level);
}

int pop(StringId domain) {
  DomainStack* d = domainStack(tl_stack, domain, false);
  if (d == nullptr || d->depth == 0) return -1;  // a pop without its push: NVTX's answer too
  const uint32_t level = --d->depth;
  if (level >= kMaxDepth) return static_cast<int>(level);
  const OpenRange& r = d->open[level];
  tl_phase_path = r.outer_path;
  record(PhaseRangeRecord{.cpu_start_ns = r.start_ns, .cpu_end_ns = nowNs(), .payload = 0, .name = r.name,
                          .domain = domain, .category = r.category, .depth = static_cast<uint16_t>(level)});
  return static_cast<int>(level);
}

// --- start/end: a process-wide table of open ranges -----------------------------------

constexpr uint32_t kOpenRanges = 4096;

struct OpenSlot {
  std::atomic<uint32_t> generation{0};  // odd while open
  OpenRange range;
  StringId domain;
};
OpenSlot g_open[kOpenRanges];
std::atomic<uint32_t> g_cursor{0};

// The id NVTX hands back at the end: slot and generation, never 0.
nvtxRangeId_t rangeStart(StringId domain, StringId name, uint32_t category) {
  const uint64_t now = nowNs();
  for (uint32_t tries = 0; tries < 64; ++tries) {
    const uint32_t slot = g_cursor.fetch_add(1, std::memory_order_relaxed) % kOpenRanges;
    uint32_t generation = g_open[slot].generation.load(std::memory_order_relaxed);
    if ((generation & 1) != 0) continue;  // open
    if (!g_open[slot].generation.compare_exchange_strong(generation, generation + 1, std::memory_order_acquire)) continue;
    g_open[slot].range = {now, name, category};
    g_open[slot].domain = domain;
    return (static_cast<uint64_t>(generation + 1) << 32) | (slot + 1);
  }
  g_table_full.fetch_add(1, std::memory_order_relaxed);
  return 0;
}

void rangeEnd(nvtxRangeId_t id) {
  const uint32_t slot = static_cast<uint32_t>(id & 0xffffffff) - 1, generation = static_cast<uint32_t>(id >> 32);
  if (id == 0 || slot >= kOpenRanges || g_open[slot].generation.load(std::memory_order_acquire) != generation) {
    if (id != 0) g_unknown_end.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const OpenRange r = g_open[slot].range;
  const StringId domain = g_open[slot].domain;
  uint32_t expected = generation;
  if (!g_open[slot].generation.compare_exchange_strong(expected, generation + 1, std::memory_order_release)) {
    g_unknown_end.fetch_add(1, std::memory_order_relaxed);  // ended twice, at once
    return;
  }
  record(PhaseRangeRecord{.cpu_start_ns = r.start_ns, .cpu_end_ns = nowNs(), .payload = 0, .name = r.name,
                          .domain = domain, .category = r.category, .depth = kUnnested});
}

void mark(StringId domain, StringId name, uint32_t category) {
  const uint64_t now = nowNs();
  record(PhaseRangeRecord{.cpu_start_ns = now, .cpu_end_ns = now, .payload = 0, .name = name, .domain = domain,
                          .category = category, .depth = kMark});
}

// --- the NVTX entry points -------------------------------------------------------------

int rangePushA(const char* message) { return push(0, internAscii(message), 0); }
int rangePushW(const wchar_t* message) { return push(0, internWide(message), 0); }
int rangePushEx(const nvtxEventAttributes_t* a) { return push(0, messageOf(a), categoryOf(a)); }
int rangePop() { return pop(0); }
nvtxRangeId_t rangeStartA(const char* message) { return rangeStart(0, internAscii(message), 0); }
nvtxRangeId_t rangeStartW(const wchar_t* message) { return rangeStart(0, internWide(message), 0); }
nvtxRangeId_t rangeStartEx(const nvtxEventAttributes_t* a) { return rangeStart(0, messageOf(a), categoryOf(a)); }
void markA(const char* message) { mark(0, internAscii(message), 0); }
void markW(const wchar_t* message) { mark(0, internWide(message), 0); }
void markEx(const nvtxEventAttributes_t* a) { mark(0, messageOf(a), categoryOf(a)); }

int domainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) { return push(idOf(d), messageOf(a), categoryOf(a)); }
int domainRangePop(nvtxDomainHandle_t d) { return pop(idOf(d)); }
nvtxRangeId_t domainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return rangeStart(idOf(d), messageOf(a), categoryOf(a));
}
void domainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t id) { rangeEnd(id); }
void domainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) { mark(idOf(d), messageOf(a), categoryOf(a)); }
nvtxDomainHandle_t domainCreateA(const char* name) { return handleOf<nvtxDomainHandle_t>(internAscii(name)); }
nvtxDomainHandle_t domainCreateW(const wchar_t* name) { return handleOf<nvtxDomainHandle_t>(internWide(name)); }
void domainDestroy(nvtxDomainHandle_t) {}
nvtxStringHandle_t domainRegisterStringA(nvtxDomainHandle_t, const char* s) { return handleOf<nvtxStringHandle_t>(internAscii(s)); }
nvtxStringHandle_t domainRegisterStringW(nvtxDomainHandle_t, const wchar_t* s) { return handleOf<nvtxStringHandle_t>(internWide(s)); }

template <class F>
void fill(NvtxFunctionTable table, unsigned int size, int slot, F* handler) {
  if (table != nullptr && static_cast<unsigned int>(slot) < size && table[slot] != nullptr)
    *table[slot] = reinterpret_cast<NvtxFunctionPointer>(handler);
}

// Writes our handlers into the slots of the core and domain modules of one NVTX-using library.
bool install(NvtxGetExportTableFunc_t get_export_table) {
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) return false;
  NvtxFunctionTable core = nullptr, core2 = nullptr;
  unsigned int core_size = 0, core2_size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size)) return false;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size)) return false;
  fill(core, core_size, NVTX_CBID_CORE_MarkEx, markEx);
  fill(core, core_size, NVTX_CBID_CORE_MarkA, markA);
  fill(core, core_size, NVTX_CBID_CORE_MarkW, markW);
  fill(core, core_size, NVTX_CBID_CORE_RangeStartEx, rangeStartEx);
  fill(core, core_size, NVTX_CBID_CORE_RangeStartA, rangeStartA);
  fill(core, core_size, NVTX_CBID_CORE_RangeStartW, rangeStartW);
  fill(core, core_size, NVTX_CBID_CORE_RangeEnd, rangeEnd);
  fill(core, core_size, NVTX_CBID_CORE_RangePushEx, rangePushEx);
  fill(core, core_size, NVTX_CBID_CORE_RangePushA, rangePushA);
  fill(core, core_size, NVTX_CBID_CORE_RangePushW, rangePushW);
  fill(core, core_size, NVTX_CBID_CORE_RangePop, rangePop);
  fill(core2, core2_size, NVTX_CBID_CORE2_DomainMarkEx, domainMarkEx);
  fill(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, domainRangeStartEx);
  fill(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, domainRangeEnd);
  fill(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, domainRangePushEx);
  fill(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, domainRangePop);
  fill(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, domainRegisterStringA);
  fill(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, domainRegisterStringW);
  fill(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, domainCreateA);
  fill(core2, core2_size, NVTX_CBID_CORE2_DomainCreateW, domainCreateW);
  fill(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, domainDestroy);
  return true;
}

}  // namespace

NvtxLosses losses() {
  return {g_too_deep.load(std::memory_order_relaxed), g_table_full.load(std::memory_order_relaxed),
          g_unknown_end.load(std::memory_order_relaxed)};
}

}  // namespace commtrace::nvtx

// NVTX calls this once per NVTX-using library, at that library's first NVTX call. Returning
// 0 makes NVTX a no-op for that library: with COMMTRACE_NVTX=0, or when its tables are not
// what we expect.
COMMTRACE_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  commtrace::loadSettings();
  if (!commtrace::settings().nvtx || get_export_table == nullptr) return 0;
  return commtrace::nvtx::install(get_export_table) ? 1 : 0;
}
