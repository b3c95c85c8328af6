#include "tools/cli_values.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <string_view>

namespace commtrace::tools {
namespace {

std::optional<int> wholeNumber(std::string_view text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

// "a" or "a-b" with a <= b.
std::optional<std::pair<int, int>> range(std::string_view text) {
  const size_t dash = text.find('-');
  const auto first = wholeNumber(text.substr(0, dash));
  const auto last = dash == std::string_view::npos ? first : wholeNumber(text.substr(dash + 1));
  if (!first || !last || *last < *first) return std::nullopt;
  return std::pair{*first, *last};
}

}  // namespace

std::optional<std::vector<int>> parseRankList(const std::string& text, std::string& error) {
  constexpr int kMostRanks = 1 << 20;
  std::set<int> ranks;
  std::string_view rest = text;
  while (true) {
    const size_t comma = rest.find(',');
    const auto r = range(rest.substr(0, comma));
    if (!r || r->second - r->first >= kMostRanks) {
      error = "'" + text + "' is not a rank list (like 3 or 0-3,8)";
      return std::nullopt;
    }
    for (int rank = r->first; rank <= r->second; ++rank) ranks.insert(rank);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return std::vector<int>(ranks.begin(), ranks.end());
}

std::optional<std::pair<int, int>> parseStepRange(const std::string& text, std::string& error) {
  const auto r = range(text);
  if (!r) error = "'" + text + "' is not a step or step range (like 5 or 10-12)";
  return r;
}

std::optional<int64_t> parseDuration(const std::string& text, std::string& error) {
  static constexpr std::pair<std::string_view, double> kUnits[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  const std::string_view unit(end, static_cast<size_t>(text.data() + text.size() - end));
  if (ec == std::errc() && std::isfinite(value) && value >= 0) {
    if (unit.empty() && value == 0) return 0;
    for (const auto& [name, ns] : kUnits)
      if (unit == name && value * ns < 9.2e18) return static_cast<int64_t>(std::llround(value * ns));
  }
  error = "'" + text + "' is not a duration (like 1.5s, 250ms, 40us or 100ns)";
  return std::nullopt;
}

std::optional<report::StepRule> parseStepRule(const std::string& text, std::string& error) {
  if (text.empty()) return report::StepRule{};
  try {
    return report::StepRule(text);
  } catch (const std::regex_error& e) {
    error = "'" + text + "' is not a regular expression (" + e.what() + ")";
    return std::nullopt;
  }
}

}  // namespace commtrace::tools
