#include "tools/report/analyses/call_stacks.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

namespace commtrace::report {
namespace {

struct StackTotals {
  CallStackRow row;
  std::set<int> ranks;
};

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

// Each distinct frame named once, however many ranks and stacks hold it.
class FrameNames {
 public:
  FrameNames(const RunModel& run, NativeSymbols& symbols) : run_(run), symbols_(symbols) {}
  const std::string& operator()(const NativeFrame& f) {
    auto [it, inserted] = names_.try_emplace(std::make_tuple(f.module, f.build_id, f.address, f.symbol));
    if (!inserted) return it->second;
    it->second = f.symbol != 0 ? std::string(run_.name(f.symbol)) : fromModule(f);
    // One frame of a ';'-joined stack (and of a folded line).
    for (char& c : it->second) c = c == ';' ? ':' : c == '\n' || c == '\r' ? ' ' : c;
    return it->second;
  }

 private:
  std::string fromModule(const NativeFrame& f) {
    const std::string_view module = f.module != 0 ? run_.name(f.module) : std::string_view();
    const std::string_view build_id = f.build_id != 0 ? run_.name(f.build_id) : std::string_view();
    return frameText(symbols_.lookup(module, build_id, f.address), module, f.address);
  }

  const RunModel& run_;
  NativeSymbols& symbols_;
  std::map<std::tuple<NameId, NameId, uint64_t, NameId>, std::string> names_;
};

}  // namespace

namespace {

std::string functionOnly(std::string_view frame) {
  std::string text(frame.substr(0, frame.rfind(" (") == std::string_view::npos ? frame.size() : frame.rfind(" (")));
  for (size_t at; (at = text.find("(anonymous namespace)::")) != std::string::npos;) text.erase(at, 23);
  if (const size_t open = text.find('('); open != std::string::npos && open > 0) text.resize(open);
  return text;
}

}  // namespace

std::string shortFrame(std::string_view frame) {
  const size_t line = frame.rfind(" (");
  const bool has_line = line != std::string_view::npos && frame.back() == ')' && frame.find(':', line) != std::string_view::npos;
  return functionOnly(frame) + (has_line ? std::string(frame.substr(line)) : std::string());
}

std::vector<std::string_view> framesOf(std::string_view stack) {
  std::vector<std::string_view> frames;
  for (size_t at = 0; at <= stack.size();) {
    const size_t end = std::min(stack.find(';', at), stack.size());
    frames.push_back(stack.substr(at, end - at));
    at = end + 1;
  }
  return frames;
}

std::string callersOf(std::string_view stack, size_t n) {
  const std::vector<std::string_view> frames = framesOf(stack);
  std::string out;
  size_t taken = 0;
  for (size_t i = frames.size() - 1; i-- > 0 && taken < n; ++taken) out += (out.empty() ? "" : " < ") + functionOnly(frames[i]);
  if (frames.size() > n + 1) out += " < ...";
  return out;
}

std::string frameText(const NativeSymbols::Symbol& symbol, std::string_view module, uint64_t address) {
  if (!symbol.function.empty())
    return symbol.file.empty() ? symbol.function : symbol.function + " (" + symbol.file + ":" + std::to_string(symbol.line) + ")";
  if (module.empty()) return hex(address);
  const size_t slash = module.rfind('/');
  return std::string(slash == std::string_view::npos ? module : module.substr(slash + 1)) + "+" + hex(address);
}

std::vector<std::string> pythonFrameNotes(const RunModel& run) {
  std::map<std::string, int> processes;  // by interpreter module
  for (const ProcessTimeline& t : run.timelines)
    if (!t.python_without_perf_map.empty()) ++processes[t.python_without_perf_map];
  std::vector<std::string> notes;
  for (const auto& [module, count] : processes)
    notes.push_back(std::to_string(count) + (count == 1 ? " Python process (" : " Python processes (") + module +
                    ") kept no perf map beside its trace, so its Python functions are not in the stacks: CPython 3.12 or "
                    "newer writes one under PYTHONPERFSUPPORT=1 (or -X perf); older interpreters cannot");
  return notes;
}

std::vector<CallStackRow> commByCallStack(const RunModel& run, NativeSymbols& symbols) {
  FrameNames names(run, symbols);
  std::map<std::string, StackTotals> by_stack;
  uint64_t all_ops = 0;
  for (size_t p = 0; p < run.timelines.size() && p < run.processes.size(); ++p) {
    for (const StackComm& s : run.timelines[p].comm_by_stack) {
      std::string stack;
      for (auto f = s.frames.rbegin(); f != s.frames.rend(); ++f) {
        if (!stack.empty()) stack += ';';
        stack += names(*f);
      }
      if (stack.empty()) stack = "(stack not recorded)";
      StackTotals& t = by_stack[stack];
      if (t.row.site.empty()) t.row.site = s.frames.empty() ? stack : names(s.frames.front());
      t.row.samples += s.samples;
      t.row.ops += s.ops;
      t.row.bytes += s.bytes;
      t.row.api_us += static_cast<double>(s.api_ns) / 1e3;
      t.ranks.insert(run.processes[p].rank);
      all_ops += s.ops;
    }
  }
  std::vector<CallStackRow> rows;
  for (auto& [stack, t] : by_stack) {
    t.row.stack = stack;
    t.row.ranks = static_cast<int>(t.ranks.size());
    t.row.ops_share = all_ops > 0 ? static_cast<double>(t.row.ops) / static_cast<double>(all_ops) : 0;
    rows.push_back(std::move(t.row));
  }
  std::sort(rows.begin(), rows.end(), [](const CallStackRow& a, const CallStackRow& b) {
    return a.ops != b.ops ? a.ops > b.ops : a.stack < b.stack;
  });
  return rows;
}

}  // namespace commtrace::report
