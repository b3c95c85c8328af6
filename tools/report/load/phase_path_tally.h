// A process's NVTX paths (PhasePathRecord: the tree of ranges its threads issued ops under)
// and its communication under each, tallied as its file is read: per path, the ops, their
// bytes and their GPU time. Memory grows with the paths the program has (its layers and
// phases; the steps share one, core/record.h), not with its ops.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tools/report/load/path_span.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

class PhasePathTally {
 public:
  // A node of the tree: `name` open inside path `parent` (0: at the top) has this id.
  void define(uint32_t id, uint32_t parent, std::string_view name);
  // An op issued under path `path` (0: no range open on its thread), with its GPU interval
  // (0, 0 where it has none); time its path already counted is not counted again (PathSpan).
  // call_piece: a send or receive of an AlltoAll, Gather or Scatter (PathComm::call_pieces).
  void addOp(uint32_t path, uint64_t bytes, uint64_t gpu_start_ns, uint64_t gpu_end_ns, bool call_piece = false);
  // A path id's name as finish() gives it (interned once its nodes have all arrived, then
  // remembered), kUnknownPath's while one has not.
  NameId nameOf(uint32_t id, const std::function<NameId(std::string_view)>& intern);
  // The paths the ops came from, named from the top down ("train_step # / backward /
  // layers.3"), one row per name (several ids may name one path: threads that met it apart).
  // Empty when no op of the process ran under a range; else ops outside any range are the
  // row kNoPath. An id whose node never arrived (a dropped record) is kUnknownPath.
  // names, when given, gets each path id the ops carried as its row's name. A shard's
  // (keep_unranged) keeps the kNoPath row alone too: another shard of the process may have
  // ranges (the merge drops it where none has: shard/shard_state.h).
  std::vector<PathComm> finish(const std::function<NameId(std::string_view)>& intern,
                               std::unordered_map<uint32_t, NameId>* names = nullptr, bool keep_unranged = false) const;

  // Nodes, and path ids with ops, held per process: a program has thousands; a damaged or
  // hostile file naming more has the rest's ops counted under kUnknownPath.
  static constexpr size_t kMaxPaths = 1 << 18;

  static constexpr std::string_view kNoPath = "(no NVTX range)";
  static constexpr std::string_view kUnknownPath = "(path not recorded)";
  static constexpr std::string_view kSeparator = " / ";
  // A path's ranges from the top down: finish()'s names split at kSeparator.
  static std::vector<std::string_view> ranges(std::string_view path);

 private:
  struct Node {
    uint32_t parent = 0;
    std::string name;
  };
  std::string pathOf(uint32_t id) const;

  std::unordered_map<uint32_t, Node> nodes_;
  std::unordered_map<uint32_t, NameId> names_;  // nameOf's, for the ids whose nodes had all arrived
  struct PathOps {
    PathComm comm;  // PathComm::path unset
    PathSpan span;
  };
  std::unordered_map<uint32_t, PathOps> ops_;  // by path id; kPastTheCap: ids past kMaxPaths
  static constexpr uint32_t kPastTheCap = UINT32_MAX;
};

}  // namespace commtrace::report
