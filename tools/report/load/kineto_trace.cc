#include "tools/report/load/kineto_trace.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "core/fnv1a.h"
#include "core/nccl_vocab.h"

namespace commtrace::report {
namespace {

using nlohmann::json;

bool endsWith(std::string_view s, std::string_view tail) { return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail; }

// The whole file, gunzipped when it is gzip (zlib reads plain files through unchanged).
bool readText(const std::string& path, std::string& out, std::string& error) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return error = "cannot open it", false;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  int code = 0;
  const char* message = n < 0 ? gzerror(f, &code) : nullptr;
  gzclose(f);
  if (n < 0) return error = std::string("cannot decompress it: ") + message, false;
  return true;
}

uint64_t nanoseconds(const json& us) { return static_cast<uint64_t>(std::llround(us.get<double>() * 1000.0)); }

// What NCCL's kernel name says: ncclKernel_AllReduce_RING_LL_Sum_float(...) or
// ncclDevKernel_AllGather_RING_LL(...): func, algorithm, protocol, datatype.
struct NcclKernelName {
  std::string func = "Unknown", algo, proto, datatype;
};

std::string datatypeOfCType(std::string_view c) {
  static const std::map<std::string_view, std::string_view> kTypes = {
      {"float", "ncclFloat32"},     {"half", "ncclFloat16"},      {"__nv_bfloat16", "ncclBfloat16"}, {"bfloat16", "ncclBfloat16"},
      {"double", "ncclFloat64"},    {"int8_t", "ncclInt8"},       {"uint8_t", "ncclUint8"},          {"int32_t", "ncclInt32"},
      {"uint32_t", "ncclUint32"},   {"int64_t", "ncclInt64"},     {"uint64_t", "ncclUint64"},        {"__nv_fp8_e4m3", "ncclFloat8e4m3"},
      {"__nv_fp8_e5m2", "ncclFloat8e5m2"}};
  const auto it = kTypes.find(c);
  return it != kTypes.end() ? std::string(it->second) : std::string();
}

NcclKernelName parseNcclKernel(std::string_view name) {
  name = name.substr(0, name.find('('));
  for (std::string_view prefix : {"ncclDevKernel_", "ncclKernel_"})
    if (name.starts_with(prefix)) name.remove_prefix(prefix.size());
  std::vector<std::string_view> parts;
  for (size_t start = 0; start <= name.size();) {
    const size_t end = std::min(name.find('_', start), name.size());
    parts.push_back(name.substr(start, end - start));
    start = end + 1;
  }
  NcclKernelName out;
  if (parts.empty() || parts[0].empty()) return out;
  out.func = std::string(parts[0]);
  if (parts.size() > 1) out.algo = std::string(parts[1]);
  if (parts.size() > 2) out.proto = std::string(parts[2]);
  // The datatype is the last part, a C type that may itself hold underscores (int8_t).
  for (size_t k = parts.size(); k-- > 3 && out.datatype.empty();) {
    std::string ctype;
    for (size_t j = k; j < parts.size(); ++j) ctype += (j > k ? "_" : "") + std::string(parts[j]);
    out.datatype = datatypeOfCType(ctype);
  }
  return out;
}

// PyTorch's names for the datatype ("Float", "BFloat16") in the NCCL metadata it adds.
const nccl::DatatypeInfo* datatypeOfTorchName(const std::string& dtype) {
  static const std::map<std::string, std::string_view> kTypes = {
      {"Float", "ncclFloat32"}, {"Half", "ncclFloat16"}, {"BFloat16", "ncclBfloat16"}, {"Double", "ncclFloat64"},
      {"Int", "ncclInt32"},     {"Long", "ncclInt64"},   {"Char", "ncclInt8"},          {"Byte", "ncclUint8"}};
  const auto it = kTypes.find(dtype);
  return it != kTypes.end() ? nccl::findDatatype(it->second) : nullptr;
}

// "[0, 1, 2]" -> {0, 1, 2}; empty when it is not such a list.
std::vector<int> rankList(const std::string& text) {
  std::vector<int> out;
  int value = 0;
  bool in_number = false;
  for (char c : text) {
    if (c >= '0' && c <= '9') value = value * 10 + (c - '0'), in_number = true;
    else if (in_number) out.push_back(value), value = 0, in_number = false;
  }
  return out;
}

std::string argString(const json& args, const char* key) {
  const auto it = args.find(key);
  if (it == args.end()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

uint64_t argNumber(const json& args, const char* key) {
  const auto it = args.find(key);
  return it != args.end() && it->is_number() ? it->get<uint64_t>() : 0;
}

class KinetoReader {
 public:
  explicit KinetoReader(RunModel& run) : run_(run) {}

  // Adds one trace, or nothing: a field of an unexpected type (a string time, a numeric
  // name) throws json::exception, after undoing what the trace had added.
  void add(const std::string& path, const json& doc);
  void finish();

 private:
  struct Op {
    uint64_t start = 0, end = 0, stream = 0;
    const json* args = nullptr;
    std::string_view name;
  };
  void addProcess(const std::string& path, const json& doc);
  void addOp(int process, int rank, const std::string& path, const Op& op);
  uint32_t commFor(int process, int rank, const std::string& path, const json& args, uint64_t stream);

  RunModel& run_;
  std::map<std::pair<int, std::string>, uint32_t> comms_;  // (process, group key) -> index
  std::map<std::pair<uint32_t, NameId>, uint64_t> seq_;    // per communicator and func
  std::map<uint32_t, uint64_t> op_index_;                  // per communicator
};

uint32_t KinetoReader::commFor(int process, int rank, const std::string& path, const json& args, uint64_t stream) {
  const std::string group = argString(args, "Process Group Name");
  const std::string key = group.empty() ? "stream " + std::to_string(stream) : "pg " + group;
  const auto [it, inserted] = comms_.try_emplace({process, key}, static_cast<uint32_t>(run_.comms.size()));
  if (!inserted) return it->second;
  Communicator c;
  c.id = fnv1a(path + "/" + key);
  if (c.id == 0) c.id = 1;  // 0 is "no communicator" in records
  const std::string description = argString(args, "Process Group Description");
  c.name = run_.names.intern(key + (description.empty() ? "" : " (" + description + ")"));
  c.one_rank_view = true;
  std::vector<int> ranks = rankList(argString(args, "Process Group Ranks"));
  if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end()) ranks = {rank};
  c.size = static_cast<int>(ranks.size());
  c.global_ranks = ranks;
  c.processes.assign(ranks.size(), -1);
  c.processes[std::find(ranks.begin(), ranks.end(), rank) - ranks.begin()] = process;
  run_.comms.push_back(std::move(c));
  return it->second;
}

void KinetoReader::addOp(int process, int rank, const std::string& path, const Op& op) {
  const json& args = *op.args;
  const uint32_t comm_index = commFor(process, rank, path, args, op.stream);
  const Communicator& comm = run_.comms[comm_index];
  const NcclKernelName parsed = parseNcclKernel(op.name);
  CollInstance c;
  c.comm = comm_index;
  c.func = run_.names.intern(parsed.func);
  c.algo = run_.names.intern(parsed.algo);
  c.proto = run_.names.intern(parsed.proto);
  const nccl::DatatypeInfo* type = datatypeOfTorchName(argString(args, "dtype"));
  if (type == nullptr) type = nccl::findDatatype(parsed.datatype);
  c.datatype = run_.names.intern(type != nullptr ? type->name : parsed.datatype);
  // The per-rank count as NCCL's API has it: AllGather's input, ReduceScatter's output.
  c.count = argNumber(args, parsed.func == "ReduceScatter" ? "Out msg nelems" : "In msg nelems");
  c.bytes = type != nullptr ? c.count * type->size : 0;
  c.seq = seq_[{comm_index, c.func}]++;
  c.op_index = op_index_[comm_index]++;
  c.first_member = static_cast<uint32_t>(run_.members.size());
  c.n_members = static_cast<uint32_t>(comm.size);
  for (int r = 0; r < comm.size; ++r) {
    MemberView m;
    m.comm_rank = r;
    if (comm.processes[r] == process) {
      m.process = process;
      m.cpu_start_ns = m.gpu_start_ns = op.start;  // one clock: the kernel's start stands for its issue
      m.gpu_end_ns = op.end;
      m.stream = op.stream;
    }
    run_.members.push_back(m);
  }
  run_.collectives.push_back(c);
  ProcessInfo& info = run_.processes[process];
  if (info.first_gpu_ns == 0 || op.start < info.first_gpu_ns) info.first_gpu_ns = op.start;
  info.last_gpu_ns = std::max(info.last_gpu_ns, op.end);
}

void KinetoReader::add(const std::string& path, const json& doc) {
  const size_t processes = run_.processes.size(), comms = run_.comms.size(), collectives = run_.collectives.size(),
               members = run_.members.size();
  try {
    addProcess(path, doc);
  } catch (const json::exception&) {
    run_.processes.resize(processes);
    run_.timelines.resize(processes);
    run_.comms.resize(comms);
    run_.collectives.resize(collectives);
    run_.members.resize(members);
    std::erase_if(comms_, [&](const auto& entry) { return entry.second >= comms; });
    std::erase_if(seq_, [&](const auto& entry) { return entry.first.first >= comms; });
    std::erase_if(op_index_, [&](const auto& entry) { return entry.first >= comms; });
    throw;
  }
}

void KinetoReader::addProcess(const std::string& path, const json& doc) {
  const int process = static_cast<int>(run_.processes.size());
  ProcessInfo info;
  info.path = path;
  const auto dist = doc.find("distributedInfo");
  const bool known = dist != doc.end() && dist->is_object();
  info.rank = known ? dist->value("rank", process) : process;
  info.world_size = known ? dist->value("world_size", -1) : -1;
  info.job_id = "kineto";
  // One clock for everything: the process maps onto itself.
  info.gpu_from_cpu = info.gpu_from_cupti = LinearMap{.slope = 1.0, .intercept = 0.0, .valid = true};
  run_.processes.push_back(info);
  run_.timelines.emplace_back();
  ProcessTimeline& t = run_.timelines.back();

  std::vector<Op> ops;
  std::map<NameId, KernelTally> tallies;
  uint64_t events = 0;
  for (const json& e : doc["traceEvents"]) {
    ++events;
    if (e.value("ph", "") != "X" || !e.contains("ts") || !e.contains("dur")) continue;
    const std::string cat = e.value("cat", "");
    const uint8_t activity = cat == "kernel" ? 1 : cat == "gpu_memcpy" ? 2 : cat == "gpu_memset" ? 3 : 0;
    const uint64_t start = nanoseconds(e["ts"]), end = start + nanoseconds(e["dur"]);
    const std::string& name = e["name"].get_ref<const std::string&>();
    if (cat == "user_annotation") {
      t.phases.push_back({run_.names.intern(name), start, end, 0});
      continue;
    }
    if (activity == 0) continue;
    if (run_.processes[process].pid == 0 && e.contains("pid") && e["pid"].is_number()) run_.processes[process].pid = e["pid"].get<int64_t>();
    const NameId id = run_.names.intern(name);
    KernelTally& k = tallies.try_emplace(id, KernelTally{.name = id, .activity = activity}).first->second;
    ++k.count;
    k.total_ns += end - start;
    k.max_ns = std::max(k.max_ns, end - start);
    if (activity != 1) continue;
    t.has_kernel_records = true;
    static const json kNoArgs = json::object();
    const auto found = e.find("args");
    const json* args = found != e.end() && found->is_object() ? &*found : &kNoArgs;
    const uint64_t stream = argNumber(*args, "stream");
    if (nccl::isNcclKernelName(name)) ops.push_back({start, end, stream, args, name});
    else t.compute.push_back({start, end, id, static_cast<uint32_t>(stream)});
  }
  run_.processes[process].records = events;
  std::sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) { return a.start < b.start; });
  for (const Op& op : ops) addOp(process, run_.processes[process].rank, path, op);
  for (const auto& [id, k] : tallies) t.kernels.push_back(k);
  std::sort(t.kernels.begin(), t.kernels.end(), [](const KernelTally& a, const KernelTally& b) { return a.total_ns > b.total_ns; });
  std::sort(t.compute.begin(), t.compute.end(), [](const GpuInterval& a, const GpuInterval& b) { return a.start_ns < b.start_ns; });
  std::sort(t.phases.begin(), t.phases.end(), [](const PhaseSpan& a, const PhaseSpan& b) { return a.cpu_start_ns < b.cpu_start_ns; });
}

void KinetoReader::finish() {
  std::stable_sort(run_.collectives.begin(), run_.collectives.end(),
                   [](const CollInstance& a, const CollInstance& b) { return std::tie(a.comm, a.op_index) < std::tie(b.comm, b.op_index); });
  std::set<int> ranks;
  for (const ProcessInfo& p : run_.processes) {
    ranks.insert(p.rank);
    run_.world_size = std::max(run_.world_size, p.world_size);
  }
  for (int r = 0; r < run_.world_size; ++r)
    if (!ranks.count(r)) run_.missing_ranks.push_back(r);
}

}  // namespace

bool looksLikeKinetoTrace(const std::string& path) { return endsWith(path, ".json") || endsWith(path, ".json.gz"); }

bool loadKinetoRun(const std::vector<std::string>& files, RunModel& run, std::ostream& err) {
  KinetoReader reader(run);
  for (const std::string& path : files) {
    std::string text, error;
    json doc;
    if (readText(path, text, error)) {
      doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (doc.is_discarded()) error = "not JSON";
      else if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) error = "JSON, but not a PyTorch profiler trace (no traceEvents)";
    }
    if (error.empty()) {
      // A field of an unexpected type (a string time, a numeric name) names the file, not a crash.
      try {
        reader.add(path, doc);
        continue;
      } catch (const json::exception& e) {
        error = std::string("not read as a PyTorch profiler trace: ") + e.what();
      }
    }
    run.skipped_files.push_back("commtrace: " + path + ": " + error);
  }
  if (run.processes.empty()) {
    for (const std::string& why : run.skipped_files) err << why << '\n';
    err << "commtrace: none of the " << files.size() << " profiler traces could be read\n";
    return false;
  }
  reader.finish();
  return true;
}

}  // namespace commtrace::report
