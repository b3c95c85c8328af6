#include "tools/report/analyses/kernel_breakdown.h"

#include <algorithm>
#include <map>

#include "core/nccl_vocab.h"

namespace commtrace::report {
namespace {

double us(uint64_t ns) { return static_cast<double>(ns) / 1e3; }

KernelRow rowOf(int rank, std::string_view name, uint8_t activity, uint64_t count, uint64_t total_ns, uint64_t max_ns,
                uint64_t whole_ns) {
  KernelRow r;
  r.rank = rank;
  r.name = std::string(name);
  r.type = std::string(kernelType(name, activity));
  r.count = count;
  r.total_us = us(total_ns);
  r.avg_us = count != 0 ? us(total_ns) / static_cast<double>(count) : 0;
  r.max_us = us(max_ns);
  r.share_pct = whole_ns != 0 ? 100.0 * static_cast<double>(total_ns) / static_cast<double>(whole_ns) : 0;
  return r;
}

// The same name over several ranks.
struct Merged {
  uint8_t activity = 1;
  uint64_t count = 0, total_ns = 0, max_ns = 0;
  int ranks = 0;
};

}  // namespace

std::string_view kernelType(std::string_view name, uint8_t activity) {
  if (activity == 2 || activity == 3) return "memory";
  return nccl::isNcclKernelName(name) ? "communication" : "computation";
}

KernelBreakdown kernelBreakdown(const RunModel& run, size_t top) {
  KernelBreakdown out;
  std::vector<size_t> order(run.processes.size());
  for (size_t p = 0; p < order.size(); ++p) order[p] = p;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return run.processes[a].rank < run.processes[b].rank; });
  std::map<NameId, Merged> merged;
  uint64_t all_ns = 0;
  for (size_t p : order) {
    if (p >= run.timelines.size() || run.timelines[p].kernels.empty()) continue;
    const int rank = run.processes[p].rank;
    const std::vector<KernelTally>& kernels = run.timelines[p].kernels;  // most total time first
    uint64_t rank_ns = 0;
    KernelTypeRow types{.rank = rank};
    for (const KernelTally& k : kernels) {
      rank_ns += k.total_ns;
      const std::string_view type = kernelType(run.name(k.name), k.activity);
      (type == "memory" ? types.memory_us : type == "communication" ? types.communication_us : types.computation_us) += us(k.total_ns);
      Merged& m = merged[k.name];
      m.activity = k.activity;
      m.count += k.count;
      m.total_ns += k.total_ns;
      m.max_ns = std::max(m.max_ns, k.max_ns);
      ++m.ranks;
    }
    all_ns += rank_ns;
    out.types.push_back(types);
    std::vector<const KernelTally*> by_count;
    for (const KernelTally& k : kernels) by_count.push_back(&k);
    std::stable_sort(by_count.begin(), by_count.end(), [](const KernelTally* a, const KernelTally* b) { return a->count > b->count; });
    for (size_t i = 0; i < kernels.size() && i < top; ++i) {
      for (const auto& [tally, list] : {std::pair{&kernels[i], &out.per_rank}, std::pair{by_count[i], &out.per_rank_by_count}}) {
        KernelRow row = rowOf(rank, run.name(tally->name), tally->activity, tally->count, tally->total_ns, tally->max_ns, rank_ns);
        row.ranks = 1;
        list->push_back(std::move(row));
      }
    }
  }
  std::vector<std::pair<NameId, Merged>> by_time(merged.begin(), merged.end());
  std::stable_sort(by_time.begin(), by_time.end(), [](const auto& a, const auto& b) { return a.second.total_ns > b.second.total_ns; });
  for (size_t i = 0; i < by_time.size() && i < top; ++i) {
    const auto& [name, m] = by_time[i];
    KernelRow row = rowOf(-1, run.name(name), m.activity, m.count, m.total_ns, m.max_ns, all_ns);
    row.ranks = m.ranks;
    out.top.push_back(std::move(row));
  }
  return out;
}

}  // namespace commtrace::report
