#include "tools/report/load/phase_path_tally.h"

#include <algorithm>
#include <map>

namespace commtrace::report {

void PhasePathTally::define(uint32_t id, uint32_t parent, std::string_view name) {
  if (id == 0 || id == kPastTheCap || (nodes_.size() >= kMaxPaths && !nodes_.contains(id))) return;
  nodes_[id] = {parent, std::string(name)};
}

void PhasePathTally::addOp(uint32_t path, uint64_t bytes, uint64_t gpu_start_ns, uint64_t gpu_end_ns, bool call_piece) {
  if (ops_.size() >= kMaxPaths && !ops_.contains(path)) path = kPastTheCap;
  PathOps& p = ops_[path];
  ++p.comm.ops;
  p.comm.call_pieces += call_piece;
  p.comm.bytes += bytes;
  if (gpu_start_ns != 0) p.comm.gpu_ns += p.span.takeLength(gpu_start_ns, gpu_end_ns);
}

// The names from the top down. A cycle or a chain longer than any NVTX nesting (a damaged
// file) ends the walk there.
std::string PhasePathTally::pathOf(uint32_t id) const {
  std::vector<const std::string*> names;
  for (uint32_t at = id; at != 0 && names.size() < 256;) {
    const auto node = nodes_.find(at);
    if (node == nodes_.end()) return std::string(kUnknownPath);
    names.push_back(&node->second.name);
    at = node->second.parent;
  }
  std::string path;
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    if (!path.empty()) path += kSeparator;
    path += **it;
  }
  return path;
}

NameId PhasePathTally::nameOf(uint32_t id, const std::function<NameId(std::string_view)>& intern) {
  if (const auto known = names_.find(id); known != names_.end()) return known->second;
  const std::string path = pathOf(id);
  const NameId name = intern(path);
  if (path != kUnknownPath && names_.size() < kMaxPaths) names_.emplace(id, name);
  return name;
}

std::vector<std::string_view> PhasePathTally::ranges(std::string_view path) {
  std::vector<std::string_view> out;
  for (size_t at = 0; at <= path.size();) {
    const size_t end = std::min(path.find(kSeparator, at), path.size());
    out.push_back(path.substr(at, end - at));
    at = end + kSeparator.size();
  }
  return out;
}

std::vector<PathComm> PhasePathTally::finish(const std::function<NameId(std::string_view)>& intern,
                                             std::unordered_map<uint32_t, NameId>* names, bool keep_unranged) const {
  if (!keep_unranged && std::none_of(ops_.begin(), ops_.end(), [](const auto& p) { return p.first != 0; })) return {};
  std::map<std::string, PathComm> by_name;
  std::map<uint32_t, std::string> name_of_id;
  for (const auto& [id, path_ops] : ops_) {
    const PathComm& comm = path_ops.comm;
    const std::string& name = name_of_id[id] = id == 0 ? std::string(kNoPath) : pathOf(id);
    PathComm& row = by_name[name];
    row.ops += comm.ops;
    row.bytes += comm.bytes;
    row.gpu_ns += comm.gpu_ns;
    row.call_pieces += comm.call_pieces;
  }
  std::vector<PathComm> rows;
  for (auto& [name, comm] : by_name) {
    comm.path = intern(name);
    rows.push_back(comm);
  }
  if (names != nullptr)
    for (const auto& [id, name] : name_of_id) (*names)[id] = by_name.at(name).path;
  return rows;
}

}  // namespace commtrace::report
