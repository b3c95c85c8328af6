#include "tools/report/output/perfetto_json.h"

#include "tools/report/output/json_stream.h"

namespace commtrace::report {
namespace {

class JsonTraceFormat final : public TraceFormat {
 public:
  explicit JsonTraceFormat(std::ostream& out) : json_(out) { json_.raw("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"); }

  void process(int pid, std::string_view name, std::string_view note) override {
    metadata(pid, 0, "process_name", "name", name);
    metadata(pid, 0, "process_sort_index", "sort_index", pid);
    if (!note.empty()) metadata(pid, 0, "process_labels", "labels", note);
  }

  void track(int pid, int tid, std::string_view name) override {
    metadata(pid, tid, "thread_name", "name", name);
    metadata(pid, tid, "thread_sort_index", "sort_index", tid);
  }

  void slice(int pid, int tid, int64_t start_ns, int64_t end_ns, std::string_view name, std::string_view category,
             std::span<const TraceArg> args, uint64_t /*flow*/) override {
    beginEvent("X", pid, tid, name);
    json_.raw(",\"cat\":").str(category).raw(",\"ts\":").microseconds(start_ns).raw(",\"dur\":").microseconds(end_ns - start_ns);
    json_.raw(",\"args\":");
    writeArgs(args);
    json_.raw("}");
  }

  void processDone(int) override {}

  void finish(std::span<const TraceArg> about) override {
    json_.raw("\n],\"otherData\":");
    writeArgs(about);
    json_.raw("}\n");
    json_.flush();
  }

 private:
  // The start of an event object; the caller adds its remaining fields and the closing brace.
  void beginEvent(const char* ph, int pid, int tid, std::string_view name) {
    json_.raw(first_event_ ? "{\"ph\":\"" : ",\n{\"ph\":\"").raw(ph).raw("\",\"pid\":").num(pid).raw(",\"tid\":").num(tid).raw(",\"name\":").str(name);
    first_event_ = false;
  }

  template <class V>
  void metadata(int pid, int tid, std::string_view name, std::string_view key, const V& value) {
    beginEvent("M", pid, tid, name);
    json_.raw(",\"args\":");
    JsonObject(json_).field(key, value).close();
    json_.raw("}");
  }

  void writeArgs(std::span<const TraceArg> args) {
    JsonObject object(json_);
    for (const TraceArg& a : args) std::visit([&](const auto& v) { object.field(a.key, v); }, a.value);
    object.close();
  }

  JsonStream json_;
  bool first_event_ = true;
};

}  // namespace

std::unique_ptr<TraceFormat> makeJsonTraceFormat(std::ostream& out) { return std::make_unique<JsonTraceFormat>(out); }

}  // namespace commtrace::report
