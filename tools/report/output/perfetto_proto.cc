#include "tools/report/output/perfetto_proto.h"

#include <algorithm>
#include <queue>
#include <unordered_map>
#include <string>
#include <vector>

#include "sink/wire.h"

namespace commtrace::report {
namespace {

namespace f = perfetto_field;
using wire::Bytes;

constexpr size_t kFlushAt = 1 << 20;
constexpr uint64_t kAboutTrack = 1;     // a global track for the facts of the whole trace
constexpr uint32_t kAboutSequence = 1;  // processes write on kAboutSequence + 1 + pid

// Track uuids: a process's own track is (pid + 1) << 32, its tracks add their tid. 0 is
// Perfetto's implicit global track; kAboutTrack sits below every process's.
uint64_t processUuid(int pid) { return (static_cast<uint64_t>(static_cast<uint32_t>(pid)) + 1) << 32; }
uint64_t trackUuid(int pid, int tid) { return processUuid(pid) | static_cast<uint32_t>(tid); }
uint32_t sequenceOf(int pid) { return kAboutSequence + 1 + static_cast<uint32_t>(pid); }
uint64_t timestampOf(int64_t ns) { return static_cast<uint64_t>(std::max<int64_t>(0, ns)); }

// Strings of one kind interned on one sequence: each new one gets the next iid (from 1) and
// is spelt once, in the InternedData of the packet that first uses it.
class InternTable {
 public:
  InternTable(uint32_t field) : field_(field) {}
  uint64_t iid(std::string_view s, Bytes& interned) {
    const auto [it, added] = iids_.try_emplace(std::string(s), iids_.size() + 1);
    if (added) {
      entry_.clear();
      wire::putVarintField(entry_, f::kInternedIid, it->second);
      wire::putStringField(entry_, f::kInternedName, s);
      wire::putBytesField(interned, field_, entry_.data(), entry_.size());
    }
    return it->second;
  }
  void clear() { iids_.clear(); }

 private:
  uint32_t field_;
  std::unordered_map<std::string, uint64_t> iids_;
  Bytes entry_;
};

// A slice's END, due once the trace reaches its time.
struct PendingEnd {
  int64_t end_ns;
  uint64_t order;  // later-begun slices end first at equal times: they nest inside
  uint64_t track;
  bool operator<(const PendingEnd& o) const {  // std::priority_queue puts the greatest on top
    return end_ns != o.end_ns ? end_ns > o.end_ns : order < o.order;
  }
};

class ProtoTraceFormat final : public TraceFormat {
 public:
  explicit ProtoTraceFormat(std::ostream& out) : out_(out) {
    descriptor_.clear();
    wire::putVarintField(descriptor_, f::kTrackUuid, kAboutTrack);
    wire::putStringField(descriptor_, f::kTrackName, "about this trace");
    packet(kAboutSequence, f::kSequenceFlags, f::kSeqIncrementalStateCleared);
    wire::putBytesField(packet_, f::kTrackDescriptor, descriptor_.data(), descriptor_.size());
    emitPacket();
  }
  ~ProtoTraceFormat() override { flush(); }

  void process(int pid, std::string_view name, std::string_view note) override {
    std::string title(name);
    if (!note.empty()) title.append(" [").append(note).append("]");
    Bytes process;
    wire::putVarintField(process, f::kProcessPid, static_cast<uint32_t>(pid));
    wire::putStringField(process, f::kProcessName, title);
    descriptor_.clear();
    wire::putVarintField(descriptor_, f::kTrackUuid, processUuid(pid));
    wire::putBytesField(descriptor_, f::kTrackProcess, process.data(), process.size());
    packet(sequenceOf(pid), f::kSequenceFlags, f::kSeqIncrementalStateCleared);
    wire::putBytesField(packet_, f::kTrackDescriptor, descriptor_.data(), descriptor_.size());
    emitPacket();
    for (InternTable* t : {&categories_, &event_names_, &arg_names_, &string_values_}) t->clear();  // a new sequence
  }

  void track(int pid, int tid, std::string_view name) override {
    descriptor_.clear();
    wire::putVarintField(descriptor_, f::kTrackUuid, trackUuid(pid, tid));
    wire::putVarintField(descriptor_, f::kTrackParentUuid, processUuid(pid));
    wire::putStringField(descriptor_, f::kTrackName, name);
    wire::putVarintField(descriptor_, f::kTrackSiblingOrderRank, static_cast<uint32_t>(tid));
    packet(sequenceOf(pid), 0, 0);
    wire::putBytesField(packet_, f::kTrackDescriptor, descriptor_.data(), descriptor_.size());
    emitPacket();
  }

  void slice(int pid, int tid, int64_t start_ns, int64_t end_ns, std::string_view name, std::string_view category,
             std::span<const TraceArg> args, uint64_t flow) override {
    endSlicesUntil(pid, start_ns);
    event_.clear();
    interned_.clear();
    wire::putVarintField(event_, f::kEventType, f::kSliceBegin);
    wire::putVarintField(event_, f::kEventTrackUuid, trackUuid(pid, tid));
    wire::putVarintField(event_, f::kEventNameIid, event_names_.iid(name, interned_));
    wire::putVarintField(event_, f::kEventCategoryIids, categories_.iid(category, interned_));
    if (flow != 0) wire::putFixed64Field(event_, f::kEventFlowIds, flow);
    putInternedAnnotations(args);
    eventPacket(sequenceOf(pid), start_ns, /*uses_interned=*/true);
    ends_.push({end_ns, ++order_, trackUuid(pid, tid)});
  }

  void processDone(int pid) override { endSlicesUntil(pid, INT64_MAX); }

  void finish(std::span<const TraceArg> about) override {
    event_.clear();
    wire::putVarintField(event_, f::kEventType, f::kInstant);
    wire::putVarintField(event_, f::kEventTrackUuid, kAboutTrack);
    wire::putStringField(event_, f::kEventName, "commtrace export");
    putAnnotations(about);
    eventPacket(kAboutSequence, 0);
    flush();
  }

 private:
  // Starts packet_ with its sequence and, when field is not 0, one more varint field.
  void packet(uint32_t sequence, uint32_t field, uint64_t value) {
    packet_.clear();
    wire::putVarintField(packet_, f::kSequenceId, sequence);
    if (field != 0) wire::putVarintField(packet_, field, value);
  }

  // A packet of event_ at ns; uses_interned: event_ refers to interned strings, of which
  // interned_ holds the ones first spelt here.
  void eventPacket(uint32_t sequence, int64_t ns, bool uses_interned = false) {
    packet(sequence, f::kTimestamp, timestampOf(ns));
    if (uses_interned) {
      wire::putVarintField(packet_, f::kSequenceFlags, f::kSeqNeedsIncrementalState);
      if (!interned_.empty()) wire::putBytesField(packet_, f::kInternedData, interned_.data(), interned_.size());
    }
    wire::putBytesField(packet_, f::kTrackEvent, event_.data(), event_.size());
    emitPacket();
  }

  void emitPacket() {
    wire::putBytesField(buffer_, f::kTracePacket, packet_.data(), packet_.size());
    if (buffer_.size() >= kFlushAt) flush();
  }

  void flush() {
    out_.write(reinterpret_cast<const char*>(buffer_.data()), static_cast<std::streamsize>(buffer_.size()));
    buffer_.clear();
  }

  // One annotation's value; a string is interned when a table is given, else spelt.
  void putValue(const TraceArg& a, InternTable* strings) {
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, int64_t>) wire::putVarintField(annotation_, f::kAnnotationInt, static_cast<uint64_t>(v));
          else if constexpr (std::is_same_v<V, uint64_t>) wire::putVarintField(annotation_, f::kAnnotationUint, v);
          else if constexpr (std::is_same_v<V, double>) wire::putDoubleField(annotation_, f::kAnnotationDouble, v);
          else if (strings != nullptr) wire::putVarintField(annotation_, f::kAnnotationStringIid, strings->iid(v, interned_));
          else wire::putStringField(annotation_, f::kAnnotationString, v);
        },
        a.value);
    wire::putBytesField(event_, f::kEventDebugAnnotations, annotation_.data(), annotation_.size());
  }

  void putInternedAnnotations(std::span<const TraceArg> args) {
    for (const TraceArg& a : args) {
      annotation_.clear();
      wire::putVarintField(annotation_, f::kAnnotationNameIid, arg_names_.iid(a.key, interned_));
      putValue(a, &string_values_);
    }
  }

  void putAnnotations(std::span<const TraceArg> args) {
    for (const TraceArg& a : args) {
      annotation_.clear();
      wire::putStringField(annotation_, f::kAnnotationName, a.key);
      putValue(a, nullptr);
    }
  }

  // Writes the ENDs due by ns, in time order (a process's sequence stays sorted).
  void endSlicesUntil(int pid, int64_t ns) {
    while (!ends_.empty() && ends_.top().end_ns <= ns) {
      const PendingEnd end = ends_.top();
      ends_.pop();
      event_.clear();
      wire::putVarintField(event_, f::kEventType, f::kSliceEnd);
      wire::putVarintField(event_, f::kEventTrackUuid, end.track);
      eventPacket(sequenceOf(pid), end.end_ns);
    }
  }

  std::ostream& out_;
  Bytes buffer_, packet_, event_, descriptor_, annotation_, interned_;
  // The current process's sequence's interned strings.
  InternTable categories_{f::kInternedCategories}, event_names_{f::kInternedEventNames},
      arg_names_{f::kInternedAnnotationNames}, string_values_{f::kInternedStringValues};
  std::priority_queue<PendingEnd> ends_;
  uint64_t order_ = 0;
};

}  // namespace

std::unique_ptr<TraceFormat> makeProtoTraceFormat(std::ostream& out) { return std::make_unique<ProtoTraceFormat>(out); }

}  // namespace commtrace::report
