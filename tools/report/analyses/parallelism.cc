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

struct Pattern {
  std::string words, kind;
};

// The patterns a communicator's ops show, given its shape.
std::vector<Pattern> patternsOf(const CommUse& use, double per, const CommunicatorRow& comm, int ranks) {
  const auto rate = [&](const char* func) {
    const auto it = use.find(func);
    return it == use.end() ? 0.0 : static_cast<double>(it->second.count) / per;
  };
  std::vector<Pattern> out;
  if (rate("AlltoAll") >= 1) out.push_back({"expert parallel (MoE AlltoAll)", "ep"});
  if (rate("Send") >= 1) out.push_back({"pipeline parallel (sends between stages)", "pp"});
  const double all_gather = rate("AllGather"), reduce_scatter = rate("ReduceScatter");
  if (all_gather >= 1 && reduce_scatter >= 1) {
    // FSDP / ZeRO-3 gathers each layer's parameters for forward and again for backward.
    if (all_gather >= 1.5 * reduce_scatter)
      out.push_back({"fully sharded data parallel (FSDP / ZeRO-3: parameters gathered again for backward)", "fsdp"});
    else out.push_back({"sharded data parallel (one AllGather per ReduceScatter: ZeRO-1/2, FSDP without resharding)", "zero"});
  }
  const auto all_reduce = use.find("AllReduce");
  if (all_reduce != use.end() && static_cast<double>(all_reduce->second.count) / per >= 1 && all_reduce->second.bytes >= kBucketBytes) {
    // Groups inside hosts that do not hold the whole job: tensor parallel; the job's world or
    // groups across hosts: data parallel (one host of 8 GPUs doing DDP is its world).
    const bool tensor = comm.hosts == 1 && comm.size >= 2 && comm.size < ranks;
    out.push_back(tensor ? Pattern{"tensor parallel", "tp"} : Pattern{"data parallel (DDP)", "ddp"});
  }
  if (out.empty()) out.push_back({"other", "other"});
  return out;
}

std::string perWord(double per) { return per > 1 ? " per step" : " in all"; }

std::string countWords(double n) { return n >= 10 || n == static_cast<double>(static_cast<uint64_t>(n)) ? fmt::fixed(n, 0) : fmt::fixed(n, 1); }

// "AllReduce 2 per step (8-16 MiB), AlltoAll 1 per step (512 KiB-1 MiB)": most used first.
std::string evidenceOf(const CommUse& use, double per) {
  std::vector<std::pair<std::string, FuncUse>> funcs(use.begin(), use.end());
  std::stable_sort(funcs.begin(), funcs.end(), [](const auto& a, const auto& b) { return a.second.count > b.second.count; });
  std::string out;
  for (const auto& [func, u] : funcs) {
    if (!out.empty()) out += ", ";
    out += func + " " + countWords(static_cast<double>(u.count) / per) + perWord(per);
    if (!u.bucket.empty()) out += " (" + u.bucket + ")";
  }
  return out;
}

}  // namespace

std::vector<ParallelismRow> recognizeParallelism(const std::vector<CommunicatorRow>& comms, const std::vector<BandwidthRow>& bandwidth,
                                                 double steps, int ranks) {
  const double per = steps >= 2 ? steps : 1;
  const std::map<uint64_t, CommUse> use = useByComm(bandwidth);
  // (kinds, size, within host, evidence) -> the row and its communicators' labels
  std::map<std::tuple<std::string, int, bool, std::string>, std::pair<ParallelismRow, std::vector<std::string>>> shapes;
  for (const CommunicatorRow& comm : comms) {
    const auto it = use.find(comm.id);
    if (it == use.end()) continue;
    ParallelismRow row;
    for (const Pattern& p : patternsOf(it->second, per, comm, ranks)) {
      row.pattern += (row.pattern.empty() ? "" : " + ") + p.words;
      row.kinds += (row.kinds.empty() ? "" : ",") + p.kind;
    }
    row.size = comm.size;
    row.within_host = comm.hosts == 1;
    row.evidence = evidenceOf(it->second, per);
    const auto key = std::make_tuple(row.kinds, row.size, row.within_host, row.evidence);
    auto& [shape, names] = shapes.try_emplace(key, std::move(row), std::vector<std::string>{}).first->second;
    names.push_back(fmt::commLabel(comm.id, comm.name));
  }
  std::vector<ParallelismRow> out;
  constexpr size_t kNamed = 4;
  for (auto& [key, entry] : shapes) {
    auto& [row, names] = entry;
    row.groups = static_cast<int>(names.size());
    for (size_t i = 0; i < names.size() && i < kNamed; ++i) row.comms += (i == 0 ? "" : ", ") + names[i];
    if (names.size() > kNamed) row.comms += " and " + std::to_string(names.size() - kNamed) + " more";
    out.push_back(std::move(row));
  }
  std::stable_sort(out.begin(), out.end(), [](const ParallelismRow& a, const ParallelismRow& b) { return a.size > b.size; });
  return out;
}

}  // namespace commtrace::report
