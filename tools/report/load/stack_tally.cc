#include "tools/report/load/stack_tally.h"

#include <algorithm>
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

NativeFrame StackTally::frameOf(uint64_t pc, const std::function<NameId(std::string_view)>& intern) const {
  // The latest recorded module holding the address: one loaded at a range another left.
  for (auto m = modules_.rbegin(); m != modules_.rend(); ++m)
    if (pc >= m->start && pc < m->end) return {intern(m->path), intern(m->build_id), pc - m->load_bias};
  return {0, 0, pc};
}

std::vector<StackComm> StackTally::finish(const std::function<NameId(std::string_view)>& intern) const {
  std::vector<StackComm> rows;
  for (const auto& [stack, figures] : samples_) {
    StackComm row = figures;
    if (const auto frames = frames_.find(stack); frames != frames_.end())
      for (const uint64_t pc : frames->second)
        if (pc != 0) row.frames.push_back(frameOf(pc, intern));
    rows.push_back(std::move(row));
  }
  // In the order of the stacks' first frames: the same files give the same rows.
  std::sort(rows.begin(), rows.end(), [](const StackComm& a, const StackComm& b) {
    return std::lexicographical_compare(a.frames.begin(), a.frames.end(), b.frames.begin(), b.frames.end(),
                                        [](const NativeFrame& x, const NativeFrame& y) {
                                          return std::tie(x.module, x.address) < std::tie(y.module, y.address);
                                        });
  });
  return rows;
}

}  // namespace commtrace::report
