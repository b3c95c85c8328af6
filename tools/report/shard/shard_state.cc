#include "tools/report/shard/shard_state.h"

#include <algorithm>
#include <cereal/types/string.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>
#include <fstream>
#include <map>
#include <tuple>

#include "sink/crc32c.h"
#include "tools/report/load/phase_path_tally.h"
#include "tools/report/load/run_model_archive.h"

namespace commtrace::report {

namespace {

constexpr char kMagic[] = "commtrace shard state";
constexpr uint32_t kVersion = 1;
constexpr size_t kTrailerBytes = 4;  // the CRC-32C of every byte before it, little-endian

// Bytes passed on to another stream buffer, their CRC-32C kept for the state's trailer.
class CrcWriter : public std::streambuf {
 public:
  explicit CrcWriter(std::streambuf* out) : out_(out) {}
  uint32_t crc() const { return crc_; }

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    crc_ = crc32c(s, static_cast<size_t>(n), crc_);
    return out_->sputn(s, n);
  }
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
  }

 private:
  std::streambuf* out_;
  uint32_t crc_ = 0;
};

// Whether the stream ends with the CRC-32C of what comes before: checked before anything of
// a state is decoded, so that a state cut short or damaged is refused whole (its sizes would
// be believed otherwise).
bool trailerMatches(std::istream& in) {
  std::vector<char> block(size_t{1} << 20);
  std::string tail;  // read, not yet hashed: the last kTrailerBytes may be the trailer
  uint32_t crc = 0;
  while (in.read(block.data(), static_cast<std::streamsize>(block.size())) || in.gcount() > 0) {
    tail.append(block.data(), static_cast<size_t>(in.gcount()));
    if (tail.size() <= kTrailerBytes) continue;
    crc = crc32c(tail.data(), tail.size() - kTrailerBytes, crc);
    tail.erase(0, tail.size() - kTrailerBytes);
  }
  if (tail.size() != kTrailerBytes) return false;
  uint32_t stored = 0;
  for (size_t i = 0; i < kTrailerBytes; ++i) stored |= static_cast<uint32_t>(static_cast<uint8_t>(tail[i])) << (8 * i);
  return stored == crc;
}

// What identifies a shard before its bulk is read: which one, of how many, of which files.
struct ShardHeader {
  std::string magic;
  uint32_t version = 0;
  int32_t shard = 0, shards = 0;
  std::string step_range;
  std::vector<std::pair<std::string, uint64_t>> files;  // every process's file and its size when read
  template <class Archive>
  void serialize(Archive& ar) {
    ar(magic, version);
    if (magic != kMagic) throw cereal::Exception("not a commtrace shard state");
    if (version != kVersion)
      throw cereal::Exception("a shard state of format " + std::to_string(version) + "; this commtrace reads format " +
                              std::to_string(kVersion));
    ar(shard, shards, step_range, files);
  }
};

ShardHeader headerOf(const RunModel& run, const std::string& step_range) {
  ShardHeader h{.magic = kMagic, .version = kVersion, .shard = run.window.shard, .shards = run.window.shards, .step_range = step_range};
  for (const ProcessInfo& p : run.processes) h.files.emplace_back(p.path, p.file_bytes);
  return h;
}

// One source read whole: its run (names in the merged pool) and analyses.
struct ShardRead {
  ShardHeader header;
  RunModel run;
  StreamedAnalyses analyses;
};

template <class Read>
bool readSource(const ShardSource& source, std::ostream& err, Read read) {
  try {
    const std::unique_ptr<std::istream> in = source.open();
    if (in == nullptr || !*in) {
      err << "commtrace: " << source.name << ": cannot be read\n";
      return false;
    }
    read(*in);
    return true;
  } catch (const std::exception& e) {  // cereal's, a truncated stream's, an impossible size's
    err << "commtrace: " << source.name << ": not a readable shard state (" << e.what() << ")\n";
    return false;
  }
}

void readState(std::istream& in, NamePool& names, ShardRead& out) {
  StateIn ar(in);
  ar(out.header);
  std::vector<std::string> shard_names;
  ar(shard_names);
  for (const std::string& name : shard_names) ar.remap.to_pool.push_back(names.intern(name));
  ar(out.run);
  out.analyses.load(ar);
}

// The rows of a process's communication by NVTX path, added by path and in name order, as
// the loader's (load/phase_path_tally.h).
void mergePaths(std::vector<PathComm>& into, const std::vector<PathComm>& from, const NamePool& names) {
  std::map<std::string_view, PathComm> by_name;
  for (const std::vector<PathComm>* rows : {static_cast<const std::vector<PathComm>*>(&into), &from})
    for (const PathComm& row : *rows) {
      PathComm& sum = by_name.try_emplace(names[row.path], PathComm{.path = row.path}).first->second;
      sum.ops += row.ops;
      sum.bytes += row.bytes;
      sum.gpu_ns += row.gpu_ns;
      sum.call_pieces += row.call_pieces;
    }
  into.clear();
  for (const auto& [name, row] : by_name) into.push_back(row);
}

// Sampled stacks added by their frames, in the loader's order (load/stack_tally.h).
void mergeStacks(std::vector<StackComm>& into, const std::vector<StackComm>& from) {
  for (const StackComm& theirs : from) {
    const auto same = std::find_if(into.begin(), into.end(), [&](const StackComm& s) { return s.frames == theirs.frames; });
    if (same == into.end()) {
      into.push_back(theirs);
      continue;
    }
    same->samples += theirs.samples;
    same->ops += theirs.ops;
    same->bytes += theirs.bytes;
    same->api_ns += theirs.api_ns;
  }
  std::stable_sort(into.begin(), into.end(), [](const StackComm& a, const StackComm& b) {
    return std::lexicographical_compare(a.frames.begin(), a.frames.end(), b.frames.begin(), b.frames.end(),
                                        [](const NativeFrame& x, const NativeFrame& y) {
                                          return std::tie(x.module, x.address) < std::tie(y.module, y.address);
                                        });
  });
}

// What the shard's stretch of time adds to each process: the tallies the loader keeps
// within a window (CUDA sync calls, proxy steps, ops by NVTX path and by call stack) and the
// pieces of AlltoAll, Gather and Scatter calls. The rest is the same in every shard.
void mergeRun(RunModel& into, RunModel& from) {
  for (size_t p = 0; p < into.timelines.size(); ++p) {
    ProcessTimeline& mine = into.timelines[p];
    ProcessTimeline& theirs = from.timelines[p];
    mine.cuda_sync.merge(theirs.cuda_sync);
    mine.proxy_wire.merge(theirs.proxy_wire);
    mergePaths(mine.comm_by_path, theirs.comm_by_path, into.names);
    mine.path_names.insert(theirs.path_names.begin(), theirs.path_names.end());
    mergeStacks(mine.comm_by_stack, theirs.comm_by_stack);
    if (mine.python_without_perf_map.empty()) mine.python_without_perf_map = std::move(theirs.python_without_perf_map);
  }
  into.transfers.insert(into.transfers.end(), from.transfers.begin(), from.transfers.end());
}

// The run as a whole run's loader leaves it: no window, and a process none of whose ops ran
// under an NVTX range has no rows by path (PhasePathTally::finish).
void finishRun(RunModel& run) {
  run.window = TimeWindow{};
  run.ops_outside_window = 0;
  const NameId unranged = run.names.find(PhasePathTally::kNoPath);
  for (ProcessTimeline& t : run.timelines)
    if (std::all_of(t.comm_by_path.begin(), t.comm_by_path.end(), [&](const PathComm& c) { return c.path == unranged; })) {
      t.comm_by_path.clear();
      t.path_names.clear();
    }
  std::stable_sort(run.transfers.begin(), run.transfers.end(),
                   [](const P2pTransfer& a, const P2pTransfer& b) { return std::tie(a.comm, a.op_index) < std::tie(b.comm, b.op_index); });
}

// Why two headers cannot be shards of one run ("" where they can).
std::string mismatchOf(const ShardHeader& first, const ShardHeader& h) {
  if (h.shards != first.shards) return "cut into " + std::to_string(h.shards) + " shards, the first state into " + std::to_string(first.shards);
  if (h.files.size() != first.files.size())
    return "of " + std::to_string(h.files.size()) + " trace files, the first state of " + std::to_string(first.files.size());
  for (size_t i = 0; i < h.files.size(); ++i)
    if (h.files[i] != first.files[i])
      return "read " + h.files[i].first + " at " + std::to_string(h.files[i].second) + " bytes, the first state " + first.files[i].first +
             " at " + std::to_string(first.files[i].second) + " (shard a run whose files no longer change)";
  if (h.step_range != first.step_range) return "read with --step-range '" + h.step_range + "', the first state with '" + first.step_range + "'";
  return "";
}

// The sources in shard order; false, with the reason, where they are not every shard of one run once.
bool orderShards(const std::vector<ShardSource>& sources, std::vector<size_t>& order, std::ostream& err) {
  if (sources.empty()) {
    err << "commtrace: no shard state to merge\n";
    return false;
  }
  std::vector<ShardHeader> headers(sources.size());
  for (size_t i = 0; i < sources.size(); ++i) {
    const auto whole = [](std::istream& in) {
      if (!trailerMatches(in)) throw cereal::Exception("its checksum does not match: cut short or damaged");
    };
    const auto header = [&](std::istream& in) {
      StateIn ar(in);
      ar(headers[i]);
    };
    if (!readSource(sources[i], err, whole) || !readSource(sources[i], err, header)) return false;
  }
  const int shards = headers[0].shards;
  std::vector<int> holder(static_cast<size_t>(std::max(shards, 1)), -1);
  for (size_t i = 0; i < sources.size(); ++i) {
    const std::string mismatch = mismatchOf(headers[0], headers[i]);
    if (!mismatch.empty()) {
      err << "commtrace: " << sources[i].name << " is not a shard of the run " << sources[0].name << " is: it was " << mismatch << '\n';
      return false;
    }
    const int s = headers[i].shard;
    if (s < 0 || s >= shards) {
      err << "commtrace: " << sources[i].name << ": shard " << s << " of " << shards << " is no shard\n";
      return false;
    }
    if (holder[static_cast<size_t>(s)] >= 0) {
      err << "commtrace: " << sources[i].name << " and " << sources[static_cast<size_t>(holder[static_cast<size_t>(s)])].name
          << " are both shard " << s << '\n';
      return false;
    }
    holder[static_cast<size_t>(s)] = static_cast<int>(i);
  }
  for (int s = 0; s < shards; ++s)
    if (holder[static_cast<size_t>(s)] < 0) {
      err << "commtrace: shard " << s << " of " << shards << " is missing: merge the states of all " << shards << " shards\n";
      return false;
    }
  order.assign(holder.begin(), holder.end());
  return true;
}

}  // namespace

bool writeShardState(std::ostream& out, const RunModel& run, const StreamedAnalyses& analyses, const std::string& step_range,
                     std::ostream& err) {
  try {
    CrcWriter crc(out.rdbuf());
    {
      std::ostream body(&crc);
      StateOut ar(body);
      ar(headerOf(run, step_range));
      std::vector<std::string> names;
      for (NameId id = 0; id < run.names.size(); ++id) names.emplace_back(run.names[id]);
      ar(names, run);
      analyses.save(ar);
    }
    char trailer[kTrailerBytes];
    for (size_t i = 0; i < kTrailerBytes; ++i) trailer[i] = static_cast<char>(crc.crc() >> (8 * i));
    out.write(trailer, kTrailerBytes);
  } catch (const std::exception& e) {
    err << "commtrace: the shard's state could not be written (" << e.what() << ")\n";
    return false;
  }
  out.flush();
  if (!out) err << "commtrace: the shard's state could not be written\n";
  return static_cast<bool>(out);
}

namespace {

// An istream over bytes held elsewhere.
class BytesStream : public std::istream {
 public:
  explicit BytesStream(const std::string& bytes) : std::istream(&buffer_), buffer_(bytes) {}

 private:
  struct Buffer : std::streambuf {
    explicit Buffer(const std::string& bytes) {
      char* begin = const_cast<char*>(bytes.data());  // read only: the get area is never written
      setg(begin, begin, begin + bytes.size());
    }
  } buffer_;
};

}  // namespace

ShardSource shardBuffer(std::string name, const std::string& bytes) {
  return {std::move(name), [&bytes]() -> std::unique_ptr<std::istream> { return std::make_unique<BytesStream>(bytes); }};
}

ShardSource shardFile(const std::string& path) {
  return {path, [path]() -> std::unique_ptr<std::istream> { return std::make_unique<std::ifstream>(path, std::ios::binary); }};
}

bool mergeShardStates(const std::vector<ShardSource>& sources, MergedRun& merged, std::ostream& err) {
  std::vector<size_t> order;
  if (!orderShards(sources, order, err)) return false;
  for (size_t k = 0; k < order.size(); ++k) {
    const ShardSource& source = sources[order[k]];
    auto shard = std::make_unique<ShardRead>();
    if (!readSource(source, err, [&](std::istream& in) { readState(in, merged.run.names, *shard); })) return false;
    if (k == 0) {
      NamePool names = std::move(merged.run.names);
      merged.run = std::move(shard->run);
      merged.run.names = std::move(names);
      merged.step_range = shard->header.step_range;
    } else {
      mergeRun(merged.run, shard->run);
    }
    merged.analyses.merge(shard->analyses);
  }
  finishRun(merged.run);
  merged.run.shards = static_cast<int>(order.size());
  return true;
}

}  // namespace commtrace::report
