#include "tools/report/load/stack_tally.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

namespace commtrace::report {

void StackTally::addFrames(const StackFramesRecord& r) {
  if (r.stack == 0 || r.depth == 0 || (frames_.size() >= kMaxStacks && !frames_.contains(r.stack))) return;
  std::vector<uint64_t>& frames = frames_[r.stack];
  const size_t depth = std::min<size_t>(r.depth, kMaxDepth);
  if (frames.size() < depth) frames.resize(depth, 0);
  for (size_t i = 0; i < static_cast<size_t>(kFramesPerRecord) && r.first + i < depth; ++i) frames[r.first + i] = r.pc[i];
}

void StackTally::addSample(const StackSampleRecord& r) {
  if (samples_.size() >= kMaxStacks && !samples_.contains(r.stack)) return;
  StackComm& s = samples_[r.stack];
  ++s.samples;
  s.ops += r.weight;
  s.bytes += r.weight * r.bytes;
  s.api_ns += r.cpu_end_ns > r.cpu_start_ns ? r.weight * (r.cpu_end_ns - r.cpu_start_ns) : 0;
}

void StackTally::addModule(const ModuleRecord& r, std::string_view path, std::string_view build_id) {
  if (r.end <= r.start || modules_.size() >= kMaxStacks) return;
  modules_.push_back({r.start, r.end, r.load_bias, std::string(path), std::string(build_id)});
}

StackTally::JitSymbols StackTally::readPerfMap(const std::string& path) {
  JitSymbols symbols;
  std::ifstream in(path);
  std::string line;
  while (symbols.size() < kMaxJitSymbols && std::getline(in, line)) {
    std::istringstream fields(line);
    uint64_t start = 0, size = 0;
    std::string name;
    if (!(fields >> std::hex >> start >> size) || size == 0 || start + size < start) continue;
    std::getline(fields >> std::ws, name);
    if (!name.empty()) symbols.push_back({start, start + size, std::move(name)});
  }
  // A later line for the same code (a JIT that compiled it again) is the one in force.
  std::stable_sort(symbols.begin(), symbols.end(), [](const JitSymbol& a, const JitSymbol& b) { return a.start < b.start; });
  return symbols;
}

NativeFrame StackTally::frameOf(uint64_t pc, const JitSymbols& jit, const std::function<NameId(std::string_view)>& intern) const {
  // The latest recorded module holding the address: one loaded at a range another left.
  for (auto m = modules_.rbegin(); m != modules_.rend(); ++m)
    if (pc >= m->start && pc < m->end) return {intern(m->path), intern(m->build_id), pc - m->load_bias};
  // In no module: JIT code. The return address is past the call, so the call is at pc - 1.
  auto it = std::upper_bound(jit.begin(), jit.end(), pc - 1, [](uint64_t at, const JitSymbol& s) { return at < s.start; });
  if (it != jit.begin() && pc - 1 < (--it)->end) return {0, 0, pc, intern(it->name)};
  return {0, 0, pc};
}

// The interpreter's module where the process ran CPython: the program (python3.11) or the
// library it embeds (libpython3.11.so).
std::string StackTally::pythonModule() const {
  for (const Module& m : modules_) {
    const std::string_view base = std::string_view(m.path).substr(m.path.rfind('/') + 1);
    if (base.starts_with("python") || base.starts_with("libpython")) return std::string(base);
  }
  return {};
}

StackTally::Finished StackTally::finish(const std::function<NameId(std::string_view)>& intern, const std::string& perf_map_path) const {
  Finished out;
  if (samples_.empty()) return out;
  const bool has_map = !perf_map_path.empty() && std::filesystem::exists(perf_map_path);
  const JitSymbols jit = has_map ? readPerfMap(perf_map_path) : JitSymbols{};
  if (!has_map) out.python_without_perf_map = pythonModule();
  std::vector<StackComm>& rows = out.stacks;
  for (const auto& [stack, figures] : samples_) {
    StackComm row = figures;
    if (const auto frames = frames_.find(stack); frames != frames_.end())
      for (const uint64_t pc : frames->second)
        if (pc != 0) row.frames.push_back(frameOf(pc, jit, intern));
    rows.push_back(std::move(row));
  }
  // In the order of the stacks' first frames: the same files give the same rows.
  std::sort(rows.begin(), rows.end(), [](const StackComm& a, const StackComm& b) {
    return std::lexicographical_compare(a.frames.begin(), a.frames.end(), b.frames.begin(), b.frames.end(),
                                        [](const NativeFrame& x, const NativeFrame& y) {
                                          return std::tie(x.module, x.address) < std::tie(y.module, y.address);
                                        });
  });
  return out;
}

}  // namespace commtrace::report
