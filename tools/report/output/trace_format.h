// What `commtrace export` writes, apart from how: processes (one per rank), tracks within
// them, slices with their args and flows. The export decides what goes where
// (perfetto_export.cc); a format spells it: Perfetto's protobuf trace (perfetto_proto.h) or
// the Chrome trace-event JSON (perfetto_json.h).
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <span>
#include <string_view>
#include <variant>

namespace commtrace::report {

struct TraceArg {
  std::string_view key;
  std::variant<int64_t, uint64_t, double, std::string_view> value;
};

class TraceFormat {
 public:
  virtual ~TraceFormat() = default;

  // A process, once per pid, before its tracks. note: "" or what the viewer should know
  // about all its times (not aligned with the other processes').
  virtual void process(int pid, std::string_view name, std::string_view note) = 0;
  // A track of a process, once per (pid, tid), before its slices; shown in tid order.
  virtual void track(int pid, int tid, std::string_view name) = 0;
  // A slice [start_ns, end_ns) on the trace's timeline (never negative). A process's slices
  // come in start order, a slice that encloses another before it; tracks nest their slices.
  // flow: 0, or an id the slices of one operation on several ranks share (drawn as arrows
  // from the earliest to the latest).
  virtual void slice(int pid, int tid, int64_t start_ns, int64_t end_ns, std::string_view name,
                     std::string_view category, std::span<const TraceArg> args, uint64_t flow) = 0;
  // Every slice of the process has been given.
  virtual void processDone(int pid) = 0;
  // The end of the trace; about: facts of the whole trace (the generator, the run).
  virtual void finish(std::span<const TraceArg> about) = 0;
};

enum class TraceEncoding { kProtobuf, kJson };
std::unique_ptr<TraceFormat> makeTraceFormat(TraceEncoding encoding, std::ostream& out);

}  // namespace commtrace::report
