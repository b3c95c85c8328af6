#include "tools/report/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iterator>

namespace commtrace::report::fmt {
namespace {

// Three significant digits at most, without trailing zeros after the point.
std::string compact(double value) {
  const int decimals = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  std::string s = fixed(value, decimals);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

}  // namespace

std::string hexId(uint64_t id) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(id));
  return buf;
}

std::string commLabel(uint64_t id, std::string_view name) { return name.empty() ? hexId(id) : std::string(name); }

std::string count(double n) { return n >= 10 || n == static_cast<double>(static_cast<uint64_t>(n)) ? fixed(n, 0) : fixed(n, 1); }

std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string bytes(uint64_t n) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(n);
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) value /= 1024, ++unit;
  return compact(value) + ' ' + kUnits[unit];
}

std::string duration(double us) {
  const double magnitude = std::fabs(us);
  if (magnitude < 1) return compact(us * 1e3) + " ns";
  if (magnitude < 1e3) return compact(us) + " us";
  if (magnitude < 1e6) return compact(us / 1e3) + " ms";
  return compact(us / 1e6) + " s";
}

namespace {
// "YYYY-MM-DD?HH:MM:SS" with `between` for ?, then `decimals` of the second.
std::string calendarTime(uint64_t realtime_ns, char between, int decimals) {
  const time_t seconds = static_cast<time_t>(realtime_ns / 1'000'000'000u);
  tm utc{};
  gmtime_r(&seconds, &utc);
  char whole[32], fraction[16];
  std::strftime(whole, sizeof whole, between == 'T' ? "%Y-%m-%dT%H:%M:%S" : "%Y-%m-%d %H:%M:%S", &utc);
  const uint64_t scale = decimals == 6 ? 1'000u : 1'000'000u;
  std::snprintf(fraction, sizeof fraction, ".%0*llu", decimals,
                static_cast<unsigned long long>(realtime_ns % 1'000'000'000u / scale));
  return std::string(whole) + fraction;
}
}  // namespace

std::string utcTime(uint64_t realtime_ns) { return calendarTime(realtime_ns, ' ', 3) + " UTC"; }
std::string isoTime(uint64_t realtime_ns) { return calendarTime(realtime_ns, 'T', 6) + "Z"; }

std::string percent(double fraction) { return fixed(100.0 * fraction, 1) + '%'; }

std::string bandwidth(double value) {
  // A few bytes (a 4-byte AllReduce): "0.00" would read as nothing moved, and "3.3e-05"
  // is noise in a GB/s column. JSON and CSV keep the exact value.
  if (value > 0 && value < 0.01) return "<0.01";
  return fixed(value, 2);
}

std::string gbs(double value) { return bandwidth(value) + " GB/s"; }

std::string counted(uint64_t n, const std::string& noun, const std::string& plural) {
  return std::to_string(n) + ' ' + (n == 1 ? noun : plural.empty() ? noun + 's' : plural);
}

std::string processesOf(const std::vector<int>& ranks) {
  const auto known = std::find_if(ranks.begin(), ranks.end(), [](int r) { return r >= 0; });
  const auto unknown = static_cast<uint64_t>(known - ranks.begin());
  const std::string named = known == ranks.end() ? "" : "rank(s) " + rankList({known, ranks.end()});
  const std::string unnamed = unknown == 0 ? "" : counted(unknown, "process", "processes") + " of no known rank";
  return named + (!named.empty() && !unnamed.empty() ? " and " : "") + unnamed;
}

std::string rankList(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (ranks[i] >= 0 && j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += ranks[i] < 0 ? "?" : std::to_string(ranks[i]);
    if (j > i + 1) out += '-' + std::to_string(ranks[j]);
    else if (j == i + 1) out += ',' + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

std::string kernelName(std::string_view name) {
  constexpr size_t kMax = 80;
  if (name.starts_with("void ")) name.remove_prefix(5);
  // The parameter list starts at the first '(' outside template brackets that follows the
  // name directly ("Memcpy HtoD (Pinned -> Device)" keeps its words).
  int depth = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    depth += name[i] == '<' ? 1 : name[i] == '>' ? -1 : 0;
    if (name[i] == '(' && depth == 0 && i > 0 && name[i - 1] != ' ') {
      name = name.substr(0, i);
      break;
    }
  }
  if (name.size() <= kMax) return std::string(name);
  return std::string(name.substr(0, kMax - 3)) + "...";
}

}  // namespace commtrace::report::fmt
