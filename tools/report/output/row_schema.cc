#include "tools/report/output/row_schema.h"

#include <charconv>
#include <algorithm>
#include <cmath>

#include "tools/report/format.h"

namespace commtrace::report::rows {
namespace {

// The unit a key names by one of its words (SCHEMA.md's conventions): "time_us_p50" is in us.
bool names(std::string_view key, std::string_view unit) {
  for (size_t from = 0; from <= key.size();) {
    const size_t end = std::min(key.find('_', from), key.size());
    if (key.substr(from, end - from) == unit) return true;
    from = end + 1;
  }
  return false;
}

std::string figure(std::string_view key, double v) {
  if (names(key, "us")) return fmt::duration(v);
  if (names(key, "gbs")) return fmt::bandwidth(v);
  if (names(key, "fraction")) return fmt::percent(v);
  if (names(key, "pct")) return fmt::fixed(v, 1) + '%';
  return fmt::fixed(v, 2);  // confidences, ppm
}

std::string count(std::string_view key, uint64_t v) { return names(key, "bytes") ? fmt::bytes(v) : std::to_string(v); }

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};

}  // namespace

std::string peopleCell(std::string_view key, const Value& value) {
  return std::visit(Overloaded{[](std::monostate) { return std::string("-"); },
                               [](bool b) { return std::string(b ? "yes" : "no"); },
                               [](int64_t v) { return std::to_string(v); },
                               [&](uint64_t v) { return count(key, v); },
                               [&](double v) { return figure(key, v); },
                               [](const std::string& s) { return s.empty() ? std::string("-") : s; },
                               [](const std::vector<int>& ranks) { return fmt::rankList(ranks); }},
                    value);
}

std::string csvCell(const Value& value) {
  return std::visit(Overloaded{[](std::monostate) { return std::string(); },
                               [](bool b) { return std::string(b ? "true" : "false"); },
                               [](int64_t v) { return std::to_string(v); },
                               [](uint64_t v) { return std::to_string(v); },
                               [](double v) {
                                 // 15 significant digits, the most a double always keeps: a time
                                 // computed in ns and divided read 543374.1224999999 in full.
                                 if (!std::isfinite(v)) return std::string();
                                 char buf[32];
                                 return std::string(buf, std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 15).ptr);
                               },
                               [](const std::string& s) { return s; },
                               [](const std::vector<int>& ranks) {
                                 std::string out;
                                 for (int r : ranks) out += (out.empty() ? "" : " ") + std::to_string(r);
                                 return out;
                               }},
                    value);
}

std::string typeName(Kind kind, Presence presence) {
  static constexpr std::string_view kNames[] = {"integer", "number", "string", "bool", "[integer]"};
  std::string name(kNames[static_cast<int>(kind)]);
  return presence == Presence::kOrNull ? name + " or null" : name;
}

}  // namespace commtrace::report::rows
