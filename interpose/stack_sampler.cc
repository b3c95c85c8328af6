#include "interpose/stack_sampler.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unwind.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <new>
#include <span>

#include "core/clock.h"
#include "core/nccl_vocab.h"
#include "core/phase_path.h"
#include "core/record.h"
#include "core/settings.h"
#include "ringbuffer/ringbuffer.h"

namespace commtrace::interpose {
namespace {

// Frames kept of a stack, innermost first: past them the outermost are left out (a Python
// program's interpreter frames run deep; the ones near the NCCL call say who called it).
constexpr uint32_t kMaxFrames = 64;
// Frames of our own (this sampler, the wrapper) read before the caller's, at most.
constexpr uint32_t kOwnFrames = 12;

// ---- per thread: when to sample ----

// (communicator, op, size class) keys the thread has sampled, direct-mapped: a key missing
// (never met, or evicted by another) is sampled, so each is sampled at least once.
constexpr uint32_t kSeenKeys = 256;

struct SamplerThread {
  uint32_t countdown = 0;     // ops until the next periodic sample (0: draw one)
  uint32_t since_sample = 0;  // ops since the thread's last sample, this one included
  uint64_t rng = 0;
  uint64_t seen[kSeenKeys] = {};
};

constinit thread_local SamplerThread* tl_sampler __attribute__((tls_model("initial-exec"))) = nullptr;
pthread_key_t g_sampler_key;
pthread_once_t g_sampler_key_once = PTHREAD_ONCE_INIT;

// Cold: a thread's first op allocates its state (2 KB), freed when the thread exits.
SamplerThread* samplerThread() {
  pthread_once(&g_sampler_key_once, [] { pthread_key_create(&g_sampler_key, [](void* s) { delete static_cast<SamplerThread*>(s); }); });
  SamplerThread* t = new (std::nothrow) SamplerThread();
  if (t == nullptr) return nullptr;
  t->rng = nowNs() ^ (reinterpret_cast<uintptr_t>(t) * 0x9E3779B97F4A7C15ull) ^ static_cast<uint64_t>(gettid());
  pthread_setspecific(g_sampler_key, t);
  return tl_sampler = t;
}

// Uniform in [1, 2 * every - 1]: one op in `every` on average, never in step with the program.
uint32_t nextInterval(SamplerThread& t, uint32_t every) {
  t.rng ^= t.rng << 13;
  t.rng ^= t.rng >> 7;
  t.rng ^= t.rng << 17;
  return every <= 1 ? 1 : 1 + static_cast<uint32_t>(t.rng % (2ull * every - 1));
}

// The key mixed by an odd multiplier (one key, one product); its slot is the product's top
// bits, which every input bit reaches.
uint64_t opKey(const void* comm, int func, uint64_t bytes) {
  const uint64_t fields = reinterpret_cast<uintptr_t>(comm) ^ (static_cast<uint64_t>(func) << 56) ^
                          (static_cast<uint64_t>(nccl::sizeClassOf(bytes)) << 48);
  return (fields * 0x9E3779B97F4A7C15ull) | 1;  // never the empty slot's 0
}

uint32_t seenSlot(uint64_t key) { return static_cast<uint32_t>(key >> 56) % kSeenKeys; }

// ---- reading the stack ----

struct Unwound {
  uintptr_t pc[kMaxFrames + kOwnFrames];
  uint32_t n = 0;
};

_Unwind_Reason_Code onFrame(_Unwind_Context* context, void* arg) {
  Unwound& u = *static_cast<Unwound*>(arg);
  const uintptr_t pc = _Unwind_GetIP(context);
  if (pc == 0) return _URC_END_OF_STACK;
  u.pc[u.n++] = pc;
  return u.n == std::size(u.pc) ? _URC_END_OF_STACK : _URC_NO_REASON;
}

// The frames from the wrapper's caller out: ours come first and are left out. Where the
// caller's return address is not met (a frame the unwinder could not read), all are kept.
std::span<const uintptr_t> callerFrames(Unwound& u, const void* caller) {
  _Unwind_Backtrace(&onFrame, &u);
  const uint32_t own_limit = std::min(u.n, kOwnFrames);
  uint32_t from = 0;
  for (uint32_t i = 0; i < own_limit; ++i) {
    if (u.pc[i] == reinterpret_cast<uintptr_t>(caller)) {
      from = i;
      break;
    }
  }
  return {u.pc + from, std::min(u.n - from, kMaxFrames)};
}

// ---- stacks, interned process-wide ----

// A stack's id is its slot + 1 in an open-addressed table of its frames' hashes, filled by
// compare-and-swap: the thread that fills a slot writes the stack's frames, every thread
// finds the id after. The hash mixes in the fork generation: a forked child's file starts
// without the parent's stacks, and meets them again as new.
constexpr uint32_t kStackSlots = 1 << 14;
constexpr uint32_t kProbes = 32;
constinit std::atomic<uint64_t> g_stacks[kStackSlots] = {};
constinit std::atomic<uint64_t> g_fork_generation{0};
constinit std::atomic<bool> g_table_full_said{false};
constinit std::atomic<uint64_t> g_samples{0};  // taken in this process: the module recorder looks when it moved

uint64_t stackHash(std::span<const uintptr_t> frames) {
  uint64_t h = 0xCBF29CE484222325ull ^ g_fork_generation.load(std::memory_order_relaxed);
  for (const uintptr_t pc : frames) h = (h ^ pc) * 0x100000001B3ull;
  return h | 3;  // bit 0 set (a written stack), bit 1 set (with bit 0 clear, never the empty 0)
}

// false when a record was dropped (the thread's ring full).
bool recordFrames(uint32_t stack, std::span<const uintptr_t> frames) {
  bool all = true;
  for (size_t first = 0; first < frames.size(); first += kFramesPerRecord) {
    StackFramesRecord r{.stack = stack, .first = static_cast<uint16_t>(first), .depth = static_cast<uint16_t>(frames.size())};
    std::copy_n(frames.begin() + first, std::min<size_t>(kFramesPerRecord, frames.size() - first), r.pc);
    all = record(r) != PushResult::kDropped && all;
  }
  return all;
}

// The stack's id, its frames recorded if it is new; 0 when the table is full. A slot holds a
// stack's hash (bit 0 set), or the hash with bit 0 clear while the stack's frames are still to
// be written (the thread's full ring dropped them): the next thread to sample the stack writes
// them again under the same id. (Emptied instead, the slot could go to another stack, and the
// samples already naming its id would read that stack's frames.)
uint32_t internStack(std::span<const uintptr_t> frames) {
  const uint64_t h = stackHash(frames);
  const uint64_t unwritten = h & ~1ull;
  for (uint32_t probe = 0; probe < kProbes; ++probe) {
    const uint32_t slot = static_cast<uint32_t>((h >> 20) + probe) % kStackSlots;
    uint64_t held = g_stacks[slot].load(std::memory_order_relaxed);
    if (held == h) return slot + 1;
    if ((held == 0 || held == unwritten) && g_stacks[slot].compare_exchange_strong(held, h, std::memory_order_relaxed)) {
      if (!recordFrames(slot + 1, frames)) g_stacks[slot].store(unwritten, std::memory_order_relaxed);
      return slot + 1;
    }
    if (held == h || held == unwritten) return slot + 1;  // another thread holds it for this stack
  }
  if (!g_table_full_said.exchange(true, std::memory_order_relaxed))
    std::fprintf(stderr, "commtrace: more distinct call stacks than %u; samples of further ones name no stack\n", kStackSlots);
  return 0;
}

// ---- the modules frames lie in (the recording thread) ----

// Modules recorded, by load address and path: the flusher's thread alone reads and writes them.
constexpr size_t kMaxModules = 4096;
struct RecordedModule {
  uintptr_t start;
  const char* path;  // the dynamic linker's string, alive while the module is loaded
};
RecordedModule g_recorded[kMaxModules];
size_t g_recorded_count = 0;
uint64_t g_samples_seen = 0;

// Hex of the module's NT_GNU_BUILD_ID note, "" without one.
void buildIdHex(const dl_phdr_info& info, char (&hex)[2 * 64 + 1]) {
  hex[0] = '\0';
  for (int i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info.dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* at = reinterpret_cast<const uint8_t*>(info.dlpi_addr + ph.p_vaddr);
    const uint8_t* end = at + ph.p_memsz;
    while (at + sizeof(ElfW(Nhdr)) <= end) {
      const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(at);
      const uint8_t* name = at + sizeof(ElfW(Nhdr));
      const uint8_t* desc = name + ((note->n_namesz + 3) & ~3u);
      if (desc + note->n_descsz > end) break;
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && std::equal(name, name + 4, "GNU") && note->n_descsz <= 64) {
        for (uint32_t b = 0; b < note->n_descsz; ++b) std::snprintf(hex + 2 * b, 3, "%02x", desc[b]);
        return;
      }
      at = desc + ((note->n_descsz + 3) & ~3u);
    }
  }
}

bool alreadyRecorded(uintptr_t start, const char* path) {
  return std::any_of(g_recorded, g_recorded + g_recorded_count,
                     [&](const RecordedModule& m) { return m.start == start && m.path == path; });
}

int recordModule(dl_phdr_info* info, size_t, void*) {
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    lo = std::min<uintptr_t>(lo, info->dlpi_addr + ph.p_vaddr);
    hi = std::max<uintptr_t>(hi, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
  }
  if (lo >= hi || alreadyRecorded(lo, info->dlpi_name) || g_recorded_count == kMaxModules) return 0;
  g_recorded[g_recorded_count++] = {lo, info->dlpi_name};
  // The program itself has no name here: its path is /proc/self/exe's.
  char exe[4096];
  const char* path = info->dlpi_name;
  if (path == nullptr || path[0] == '\0') {
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    path = exe;
  }
  char build_id[2 * 64 + 1];
  buildIdHex(*info, build_id);
  record(ModuleRecord{.start = lo,
                      .end = hi,
                      .load_bias = info->dlpi_addr,
                      .path = StringTable::global().intern(path),
                      .build_id = StringTable::global().intern(build_id)});
  return 0;
}

// ---- the perf map (the recording thread) ----

constexpr off_t kMaxPerfMapBytes = off_t{256} << 20;  // past any JIT's names for its code
off_t g_perf_map_copied = -1;  // the size of the map last copied

// Copies `from` to `to` through a temporary name, so a reader never sees half of it.
bool copyFile(const char* from, const std::string& to) {
  const int in = open(from, O_RDONLY | O_CLOEXEC);
  if (in < 0) return false;
  const std::string partial = to + ".partial";
  const int out = open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = out >= 0;
  char buffer[1 << 16];
  for (ssize_t n; ok && (n = read(in, buffer, sizeof buffer)) != 0;) {
    if (n < 0) ok = errno == EINTR;
    else ok = write(out, buffer, static_cast<size_t>(n)) == n;
  }
  close(in);
  if (out >= 0) close(out);
  return ok ? rename(partial.c_str(), to.c_str()) == 0 : (unlink(partial.c_str()), false);
}

void keepPerfMap(const std::string& trace_path) {
  if (trace_path.empty()) return;
  char map[64];
  std::snprintf(map, sizeof map, "/tmp/perf-%d.map", static_cast<int>(getpid()));
  struct stat st{};
  if (stat(map, &st) != 0 || st.st_size == g_perf_map_copied || st.st_size > kMaxPerfMapBytes) return;
  if (copyFile(map, trace_path + ".perf-map")) g_perf_map_copied = st.st_size;
}

}  // namespace

uint32_t stackSampleDue(const void* comm, int func, uint64_t bytes) {
  const uint32_t every = settings().stacks;
  if (every == 0) return 0;
  SamplerThread* t = tl_sampler;
  if (t == nullptr) [[unlikely]] {
    t = samplerThread();
    if (t == nullptr) return 0;
  }
  ++t->since_sample;
  const uint64_t key = opKey(comm, func, bytes);
  uint64_t& seen = t->seen[seenSlot(key)];
  const bool periodic = t->countdown <= 1;
  if (!periodic) --t->countdown;
  if (!periodic && seen == key) [[likely]] return 0;
  if (periodic) t->countdown = nextInterval(*t, every);
  seen = key;
  // Every sample closes its thread's interval: the weights of a thread's samples add up to its ops.
  const uint32_t weight = t->since_sample;
  t->since_sample = 0;
  return weight;
}

void takeStackSample(const SampledOp& op, uint32_t weight) {
  Unwound unwound;
  const uint32_t stack = internStack(callerFrames(unwound, op.caller));
  record(StackSampleRecord{.comm_id = op.comm_id,
                           .bytes = op.bytes,
                           .cpu_start_ns = op.cpu_start_ns,
                           .cpu_end_ns = nowNs(),
                           .func = op.func,
                           .stack = stack,
                           .phase_path = currentPhasePath(),
                           .weight = weight});
  g_samples.fetch_add(1, std::memory_order_relaxed);
}

void recordSampledModules(const std::string& trace_path) {
  const uint64_t samples = g_samples.load(std::memory_order_relaxed);
  if (samples == g_samples_seen) return;
  g_samples_seen = samples;
  dl_iterate_phdr(&recordModule, nullptr);
  keepPerfMap(trace_path);
}

void forgetStacksAfterFork() {
  g_fork_generation.fetch_add(1, std::memory_order_relaxed);
  g_recorded_count = 0;
  g_samples_seen = 0;
  g_perf_map_copied = -1;
}

}  // namespace commtrace::interpose
