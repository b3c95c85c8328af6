#include "tools/report/analyses/parallelism.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "tools/report/format.h"

namespace commtrace::report {
namespace {

// What one communicator ran: per func, its instances (transfers for sends) and the size
// bucket most of them fell in.
struct FuncUse {
  uint64_t count = 0;
  uint64_t bucket_count = 0;  // instances in the busiest bucket
  uint64_t bytes = 0;         // that bucket's message size
  std::string bucket;
};

using CommUse = std::map<std::string, FuncUse>;

std::map<uint64_t, CommUse> useByComm(const std::vector<BandwidthRow>& bandwidth) {
  std::map<uint64_t, CommUse> out;
  for (const BandwidthRow& b : bandwidth) {
    FuncUse& use = out[b.comm][b.func];
    use.count += b.count;
    if (b.count > use.bucket_count) use.bucket_count = b.count, use.bytes = b.bytes, use.bucket = b.bucket;
  }
  return out;
}

constexpr uint64_t kBucketBytes = 1u << 20;  // an AllReduce this large moves gradients, not a loss or a flag

// The patterns a communicator's ops show, given its shape, as ParallelismRow::kinds says them.
std::vector<std::string> patternsOf(const CommUse& use, double per, const CommunicatorRow& comm, int ranks) {
  const auto rate = [&](const char* func) {
    const auto it = use.find(func);
    return it == use.end() ? 0.0 : static_cast<double>(it->second.count) / per;
  };
  std::vector<std::string> out;
  if (rate("AlltoAll") >= 1) out.push_back("ep");
  if (rate("Send") >= 1) out.push_back("pp");
  const double all_gather = rate("AllGather"), reduce_scatter = rate("ReduceScatter");
  if (all_gather >= 1 && reduce_scatter >= 1) {
    // FSDP / ZeRO-3 gathers each layer's parameters for forward and again for backward.
    out.push_back(all_gather >= 1.5 * reduce_scatter ? "fsdp" : "zero");
  }
  const auto all_reduce = use.find("AllReduce");
  if (all_reduce != use.end() && static_cast<double>(all_reduce->second.count) / per >= 1 && all_reduce->second.bytes >= kBucketBytes) {
    // Groups inside hosts that do not hold the whole job: tensor parallel; the job's world or
    // groups across hosts: data parallel (one host of 8 GPUs doing DDP is its world).
    const bool tensor = comm.hosts == 1 && comm.size >= 2 && comm.size < ranks;
    out.push_back(tensor ? "tp" : "ddp");
  }
  if (out.empty()) out.push_back("other");
  return out;
}

// Most used first.
std::vector<ParallelismRow::FuncUse> usesOf(const CommUse& use, double per) {
  std::vector<std::pair<std::string, FuncUse>> funcs(use.begin(), use.end());
  std::stable_sort(funcs.begin(), funcs.end(), [](const auto& a, const auto& b) { return a.second.count > b.second.count; });
  std::vector<ParallelismRow::FuncUse> out;
  for (const auto& [func, u] : funcs) out.push_back({func, static_cast<double>(u.count) / per, u.bucket});
  return out;
}

// Communicators of one shape ran the same: the same funcs, counts as said, and buckets.
using UseKey = std::vector<std::tuple<std::string, std::string, std::string>>;
UseKey useKey(const std::vector<ParallelismRow::FuncUse>& uses) {
  UseKey key;
  for (const ParallelismRow::FuncUse& u : uses) key.emplace_back(u.func, fmt::count(u.count), u.bucket);
  return key;
}

}  // namespace

std::vector<ParallelismRow> recognizeParallelism(const std::vector<CommunicatorRow>& comms, const std::vector<BandwidthRow>& bandwidth,
                                                 double steps, int ranks) {
  const double per = steps >= 2 ? steps : 1;
  const std::map<uint64_t, CommUse> use = useByComm(bandwidth);
  // (kinds, size, within host, what it ran) -> the row
  std::map<std::tuple<std::string, int, bool, UseKey>, ParallelismRow> shapes;
  for (const CommunicatorRow& comm : comms) {
    const auto it = use.find(comm.id);
    if (it == use.end()) continue;
    ParallelismRow row;
    for (const std::string& kind : patternsOf(it->second, per, comm, ranks)) row.kinds += (row.kinds.empty() ? "" : ",") + kind;
    row.size = comm.size;
    row.within_host = comm.hosts == 1;
    row.uses = usesOf(it->second, per);
    row.per_step = per > 1;
    const auto key = std::make_tuple(row.kinds, row.size, row.within_host, useKey(row.uses));
    ParallelismRow& shape = shapes.try_emplace(key, std::move(row)).first->second;
    shape.comm_labels.push_back(fmt::commLabel(comm.id, comm.name));
    shape.groups = static_cast<int>(shape.comm_labels.size());
  }
  std::vector<ParallelismRow> out;
  for (auto& [key, row] : shapes) out.push_back(std::move(row));
  std::stable_sort(out.begin(), out.end(), [](const ParallelismRow& a, const ParallelismRow& b) { return a.size > b.size; });
  return out;
}

}  // namespace commtrace::report
