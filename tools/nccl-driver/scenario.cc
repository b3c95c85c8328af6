#include "tools/nccl-driver/scenario.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace commtrace::driver {
namespace {

using nlohmann::json;

// Reads one JSON object, remembering which keys were asked for, so that a misspelt key is
// an error rather than a silently ignored setting.
class ObjectReader {
 public:
  ObjectReader(const json& j, std::string where, const std::string& origin)
      : j_(j), where_(std::move(where)), origin_(origin) {
    if (!j_.is_object()) fail("must be an object");
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw ScenarioError("commtrace: " + origin_ + ": " + (where_.empty() ? "" : where_ + ": ") + what);
  }
  [[noreturn]] void failKey(const char* key, const std::string& what) const { fail("'" + std::string(key) + "' " + what); }

  const json* find(const char* key) {
    known_.insert(key);
    const auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  bool has(const char* key) const { return j_.contains(key); }

  int64_t integer(const char* key, int64_t min, int64_t max) {
    const json* v = find(key);
    if (v == nullptr) failKey(key, "is missing");
    return integerValue(key, *v, min, max);
  }
  int64_t integer(const char* key, int64_t min, int64_t max, int64_t fallback) {
    return has(key) ? integer(key, min, max) : fallback;
  }
  uint64_t unsignedInteger(const char* key, uint64_t fallback) {
    const json* v = find(key);
    if (v == nullptr) return fallback;
    if (!v->is_number_unsigned()) failKey(key, "must be a non-negative integer");
    return v->get<uint64_t>();
  }
  uint64_t requiredUnsigned(const char* key) {
    if (!has(key)) failKey(key, "is missing");
    return unsignedInteger(key, 0);
  }
  double number(const char* key, double min, double fallback) {
    const json* v = find(key);
    if (v == nullptr) return fallback;
    if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < min)
      failKey(key, min > 0 ? "must be a positive number" : "must be a number >= " + formatNumber(min));
    return v->get<double>();
  }
  // Milliseconds or microseconds in the file, nanoseconds in the model.
  uint64_t duration(const char* key, double unit_ns, uint64_t fallback_ns) {
    if (!has(key)) return fallback_ns;
    return static_cast<uint64_t>(std::llround(number(key, 0, 0) * unit_ns));
  }
  bool boolean(const char* key, bool fallback) {
    const json* v = find(key);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) failKey(key, "must be true or false");
    return v->get<bool>();
  }
  std::string string(const char* key) {
    const json* v = find(key);
    if (v == nullptr) failKey(key, "is missing");
    if (!v->is_string() || v->get<std::string>().empty()) failKey(key, "must be a non-empty string");
    return v->get<std::string>();
  }
  std::string string(const char* key, const std::string& fallback) { return has(key) ? string(key) : fallback; }
  const json& array(const char* key) {
    const json* v = find(key);
    if (v == nullptr) failKey(key, "is missing");
    if (!v->is_array()) failKey(key, "must be an array");
    return *v;
  }

  int64_t integerValue(const char* key, const json& v, int64_t min, int64_t max) const {
    if (!v.is_number_integer() || v.get<int64_t>() < min || v.get<int64_t>() > max ||
        (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(max)))
      failKey(key, "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    return v.get<int64_t>();
  }

  // Every key present must have been asked for.
  void finish() const {
    for (const auto& [key, value] : j_.items())
      if (!known_.count(key)) fail("unknown key '" + key + "'");
  }
  const std::string& where() const { return where_; }

 private:
  static std::string formatNumber(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
  }
  const json& j_;
  std::string where_;
  const std::string& origin_;
  std::set<std::string> known_;
};

std::string at(const std::string& where, const char* key, size_t i) { return where + (where.empty() ? "" : ".") + key + "[" + std::to_string(i) + "]"; }

// [a, b] with both in [0, limit).
std::pair<int, int> pairOf(ObjectReader& r, const char* key, const json& v, int limit, const char* what) {
  if (!v.is_array() || v.size() != 2 || !v[0].is_number_integer() || !v[1].is_number_integer())
    r.failKey(key, std::string("must be a pair of ") + what + " [a, b]");
  const int64_t a = v[0].get<int64_t>(), b = v[1].get<int64_t>();
  if (a < 0 || b < 0 || a >= limit || b >= limit)
    r.failKey(key, "names " + std::string(what) + " outside [0, " + std::to_string(limit - 1) + "]");
  if (a == b) r.failKey(key, std::string("needs two different ") + what);
  return {static_cast<int>(a), static_cast<int>(b)};
}

void readClock(const json& j, Scenario& s, const std::string& origin) {
  ObjectReader r(j, "gpu_clock", origin);
  s.gpu_clock_base_ns = r.unsignedInteger("base_ns", s.gpu_clock_base_ns);
  s.timer_tick_ns = static_cast<uint64_t>(r.integer("tick_ns", 1, 1'000'000, static_cast<int64_t>(s.timer_tick_ns)));
  if (const json* offsets = r.find("node_offsets_ns")) {
    if (!offsets->is_array() || offsets->size() != static_cast<size_t>(s.nodes))
      r.failKey("node_offsets_ns", "must list one offset per node (" + std::to_string(s.nodes) + ")");
    for (size_t i = 0; i < offsets->size(); ++i)
      s.node_offsets_ns[i] = r.integerValue("node_offsets_ns", (*offsets)[i], -3'600'000'000'000, 3'600'000'000'000);
  }
  if (const json* drift = r.find("node_drift_ppm")) {
    if (!drift->is_array() || drift->size() != static_cast<size_t>(s.nodes))
      r.failKey("node_drift_ppm", "must list one drift per node (" + std::to_string(s.nodes) + ")");
    for (size_t i = 0; i < drift->size(); ++i) {
      const json& v = (*drift)[i];
      if (!v.is_number() || std::fabs(v.get<double>()) > 1000) r.failKey("node_drift_ppm", "values must be numbers within +-1000 ppm");
      s.node_drift_ppm[i] = v.get<double>();
    }
  }
  r.finish();
}

void readNetwork(const json& j, Scenario& s, const std::string& origin) {
  ObjectReader r(j, "network", origin);
  s.intra_node_gbps = r.number("intra_node_gbps", 1e-3, s.intra_node_gbps);
  s.inter_node_gbps = r.number("inter_node_gbps", 1e-3, s.inter_node_gbps);
  s.intra_node_latency_ns = r.duration("intra_node_latency_us", 1e3, s.intra_node_latency_ns);
  s.inter_node_latency_ns = r.duration("inter_node_latency_us", 1e3, s.inter_node_latency_ns);
  s.channel_spread_ns = static_cast<uint64_t>(r.integer("channel_spread_ns", 0, 1'000'000, static_cast<int64_t>(s.channel_spread_ns)));
  r.finish();
}

void readComms(const json& list, Scenario& s, const std::string& origin) {
  for (size_t i = 0; i < list.size(); ++i) {
    ObjectReader r(list[i], at("", "communicators", i), origin);
    CommDef def;
    def.name = r.string("name");
    for (const CommDef& other : s.comms)
      if (other.name == def.name) r.fail("communicator name '" + def.name + "' is used twice");
    const json* groups = r.find("groups");
    if (groups == nullptr) r.failKey("groups", "is missing");
    if (groups->is_string() && groups->get<std::string>() == "world") {
      def.groups.emplace_back();
      for (int rank = 0; rank < s.ranks(); ++rank) def.groups.back().push_back(rank);
    } else {
      if (!groups->is_array() || groups->empty()) r.failKey("groups", "must be \"world\" or a non-empty array of rank lists");
      std::set<int> seen;
      for (const json& g : *groups) {
        if (!g.is_array() || g.empty()) r.failKey("groups", "must hold non-empty lists of global ranks");
        def.groups.emplace_back();
        for (const json& v : g) {
          const int rank = static_cast<int>(r.integerValue("groups", v, 0, s.ranks() - 1));
          if (!seen.insert(rank).second) r.failKey("groups", "lists rank " + std::to_string(rank) + " twice (a rank belongs to at most one group of a communicator)");
          def.groups.back().push_back(rank);
        }
      }
    }
    r.finish();
    s.comms.push_back(std::move(def));
  }
}

// The group of comm that holds rank, or -1.
int groupOf(const CommDef& comm, int rank) {
  for (size_t g = 0; g < comm.groups.size(); ++g)
    if (std::find(comm.groups[g].begin(), comm.groups[g].end(), rank) != comm.groups[g].end()) return static_cast<int>(g);
  return -1;
}

Func readFunc(ObjectReader& r) {
  const std::string name = r.string("op");
  const nccl::FuncInfo* f = nccl::findFunc(name);
  if (f != nullptr && f->func != Func::kRecv) return f->func;  // a Send's pairs make its Recv
  r.failKey("op", "'" + name + "' is not one of AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, Send (with pairs), AlltoAll, Gather, Scatter");
}

OpDef readOp(ObjectReader& r, const Scenario& s) {
  OpDef op;
  op.func = readFunc(r);
  const std::string comm = r.string("comm");
  const auto it = std::find_if(s.comms.begin(), s.comms.end(), [&](const CommDef& c) { return c.name == comm; });
  if (it == s.comms.end()) r.failKey("comm", "names no communicator: '" + comm + "'");
  op.comm = static_cast<int>(it - s.comms.begin());
  op.count = r.requiredUnsigned("count");
  if (op.count > (uint64_t{1} << 40)) r.failKey("count", "is above 2^40 elements");
  const std::string datatype = r.string("datatype");
  op.datatype = nccl::findDatatype(datatype);
  if (op.datatype == nullptr) r.failKey("datatype", "'" + datatype + "' is not an NCCL datatype (ncclInt8 ... ncclFloat8e5m2)");

  size_t smallest_group = SIZE_MAX;
  for (const auto& g : it->groups) smallest_group = std::min(smallest_group, g.size());
  if (nccl::funcInfo(op.func).rooted) op.root = static_cast<int>(r.integer("root", 0, static_cast<int64_t>(smallest_group) - 1, 0));
  if (op.func == Func::kSend) {
    const json& pairs = r.array("pairs");
    if (pairs.empty()) r.failKey("pairs", "must list at least one [sender, receiver]");
    for (const json& p : pairs) {
      const auto pair = pairOf(r, "pairs", p, s.ranks(), "ranks");
      const int g = groupOf(*it, pair.first);
      if (g < 0 || g != groupOf(*it, pair.second))
        r.failKey("pairs", "[" + std::to_string(pair.first) + ", " + std::to_string(pair.second) + "] are not in one group of '" + comm + "'");
      op.pairs.push_back(pair);
    }
  }
  if (r.has("algo")) {
    const std::string algo = r.string("algo");
    const std::string_view* known = nccl::findName(nccl::kAlgoNames, algo);
    op.algo = known != nullptr ? known->data() : nullptr;
    if (op.algo == nullptr || !isCollective(op.func)) r.failKey("algo", "'" + algo + "' must be TREE, RING, COLLNET_DIRECT, COLLNET_CHAIN, NVLS, NVLS_TREE or PAT, on a collective");
  }
  if (r.has("proto")) {
    const std::string proto = r.string("proto");
    const std::string_view* known = nccl::findName(nccl::kProtoNames, proto);
    op.proto = known != nullptr ? known->data() : nullptr;
    if (op.proto == nullptr || !isCollective(op.func)) r.failKey("proto", "'" + proto + "' must be LL, LL128 or SIMPLE, on a collective");
  }
  op.channels = static_cast<int>(r.integer("channels", 1, 32, 0));
  op.graph_captured = r.boolean("graph_captured", false);
  op.user_tag = r.unsignedInteger("user_tag", 0);
  if (op.user_tag >> 63) r.failKey("user_tag", "has its top bit set (reserved by NCCL)");
  return op;
}

// "nvtx": "forward/layers.0": the ranges from the outermost, none empty.
std::vector<std::string> nvtxPath(ObjectReader& r) {
  std::vector<std::string> ranges;
  const std::string path = r.string("nvtx", "");
  for (size_t at = 0; !path.empty() && at <= path.size();) {
    const size_t end = std::min(path.find('/', at), path.size());
    if (end == at) r.failKey("nvtx", "has an empty range name (ranges are separated by '/')");
    ranges.push_back(path.substr(at, end - at));
    at = end + 1;
  }
  return ranges;
}

void readStep(const json& list, Scenario& s, const std::string& origin) {
  if (list.empty()) throw ScenarioError("commtrace: " + origin + ": 'step' must list at least one item");
  for (size_t i = 0; i < list.size(); ++i) {
    ObjectReader r(list[i], at("", "step", i), origin);
    StepItem item;
    const int forms = r.has("compute_ms") + r.has("op") + r.has("group");
    if (forms != 1) r.fail("must have exactly one of 'compute_ms', 'op' or 'group'");
    const int repeat = static_cast<int>(r.integer("repeat", 1, 10'000, 1));
    item.nvtx = nvtxPath(r);
    if (r.has("compute_ms")) {
      item.kind = StepItem::Kind::kCompute;
      item.compute_ns = r.duration("compute_ms", 1e6, 0);
      item.kernel = r.string("kernel", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_kernel");
      if (const json* ranks = r.find("ranks")) {
        if (!ranks->is_array() || ranks->empty()) r.failKey("ranks", "must be a non-empty list of global ranks");
        for (const json& v : *ranks) item.ranks.push_back(static_cast<int>(r.integerValue("ranks", v, 0, s.ranks() - 1)));
      }
    } else {
      item.kind = StepItem::Kind::kOps;
      item.overlap = r.boolean("overlap", false);
      if (r.has("op")) {
        item.ops.push_back(readOp(r, s));
      } else {
        item.user_group = true;
        const json& ops = r.array("group");
        if (ops.empty()) r.failKey("group", "must list at least one op");
        for (size_t k = 0; k < ops.size(); ++k) {
          ObjectReader op(ops[k], at(r.where(), "group", k), origin);
          item.ops.push_back(readOp(op, s));
          op.finish();
          // One group is one capture: NCCL records the whole plan into the graph.
          if (item.ops.back().graph_captured != item.ops.front().graph_captured)
            r.failKey("group", "mixes graph_captured and eager ops");
        }
      }
    }
    r.finish();
    for (int k = 0; k < repeat; ++k) s.step.push_back(item);
  }
}

void readPlanted(ObjectReader& top, Scenario& s, const std::string& origin) {
  if (const json* killed = top.find("killed")) {
    ObjectReader r(*killed, "killed", origin);
    s.killed_rank = static_cast<int>(r.integer("rank", 0, s.ranks() - 1));
    s.killed_at_step = static_cast<int>(r.integer("at_step", 0, s.steps - 1));
    s.killed_after_ms = static_cast<int>(r.integer("after_ms", 0, 60'000, 0));
    r.finish();
  }
  if (top.has("stragglers")) {
    const json& list = top.array("stragglers");
    for (size_t i = 0; i < list.size(); ++i) {
      ObjectReader r(list[i], at("", "stragglers", i), origin);
      Straggler st;
      st.rank = static_cast<int>(r.integer("rank", 0, s.ranks() - 1));
      st.extra_compute_ns = r.duration("extra_compute_ms", 1e6, 0);
      st.extra_host_ns = r.duration("extra_host_ms", 1e6, 0);
      st.last_step = s.steps - 1;
      if (const json* steps = r.find("steps")) {
        if (!steps->is_array() || steps->size() != 2) r.failKey("steps", "must be [first, last]");
        st.first_step = static_cast<int>(r.integerValue("steps", (*steps)[0], 0, s.steps - 1));
        st.last_step = static_cast<int>(r.integerValue("steps", (*steps)[1], st.first_step, s.steps - 1));
      }
      r.finish();
      s.stragglers.push_back(st);
    }
  }
  if (top.has("slow_links")) {
    const json& list = top.array("slow_links");
    for (size_t i = 0; i < list.size(); ++i) {
      ObjectReader r(list[i], at("", "slow_links", i), origin);
      SlowLink link;
      if (r.has("nodes") == r.has("ranks")) r.fail("must have exactly one of 'nodes' or 'ranks'");
      link.between_nodes = r.has("nodes");
      const char* key = link.between_nodes ? "nodes" : "ranks";
      std::tie(link.a, link.b) = pairOf(r, key, *r.find(key), link.between_nodes ? s.nodes : s.ranks(), key);
      if (!r.has("gbps")) r.failKey("gbps", "is missing");
      link.gbps = r.number("gbps", 1e-3, 0);
      r.finish();
      s.slow_links.push_back(link);
    }
  }
}

}  // namespace

Scenario parseScenario(std::string_view json_text, const std::string& origin) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    throw ScenarioError("commtrace: " + origin + ": not valid JSON: " + e.what());
  }
  ObjectReader top(j, "", origin);
  Scenario s;
  s.name = top.string("name");
  s.description = top.string("description", "");
  s.nvtx_step = top.string("nvtx_step", "");
  s.seed = top.unsignedInteger("seed", s.seed);
  s.nodes = static_cast<int>(top.integer("nodes", 1, 4096));
  s.ranks_per_node = static_cast<int>(top.integer("ranks_per_node", 1, 64));
  if (s.ranks() > 4096) top.fail("more than 4096 ranks");
  s.steps = static_cast<int>(top.integer("steps", 1, 1'000'000));
  s.node_offsets_ns.assign(s.nodes, 0);
  s.node_drift_ppm.assign(s.nodes, 0.0);
  if (const json* clock = top.find("gpu_clock")) readClock(*clock, s, origin);
  if (const json* network = top.find("network")) readNetwork(*network, s, origin);
  s.compute_jitter_ns = top.duration("compute_jitter_ms", 1e6, 0);
  readComms(top.array("communicators"), s, origin);
  if (s.comms.empty()) top.failKey("communicators", "must define at least one communicator");
  readPlanted(top, s, origin);
  if (top.has("recreate_comms_at_steps")) {
    for (const json& v : top.array("recreate_comms_at_steps"))
      s.recreate_comms_at_steps.push_back(static_cast<int>(top.integerValue("recreate_comms_at_steps", v, 1, s.steps - 1)));
    std::sort(s.recreate_comms_at_steps.begin(), s.recreate_comms_at_steps.end());
    s.recreate_comms_at_steps.erase(std::unique(s.recreate_comms_at_steps.begin(), s.recreate_comms_at_steps.end()),
                                    s.recreate_comms_at_steps.end());
  }
  readStep(top.array("step"), s, origin);
  top.finish();
  return s;
}

Scenario loadScenario(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ScenarioError("commtrace: " + path + ": cannot read the scenario file");
  std::ostringstream text;
  text << in.rdbuf();
  return parseScenario(text.str(), path);
}

}  // namespace commtrace::driver
