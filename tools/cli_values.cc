#include "tools/cli_values.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
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
  static constexpr std::pair<std::string_view, double> kUnits[] = {{"ns", 1},     {"us", 1e3},  {"ms", 1e6},
                                                                    {"s", 1e9},     {"min", 6e10}, {"h", 3.6e12}};
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  const std::string_view unit(end, static_cast<size_t>(text.data() + text.size() - end));
  if (ec == std::errc() && std::isfinite(value) && value >= 0) {
    if (unit.empty() && value == 0) return 0;
    for (const auto& [name, ns] : kUnits)
      if (unit == name && value * ns < 9.2e18) return static_cast<int64_t>(std::llround(value * ns));
  }
  error = "'" + text + "' is not a duration (like 2min, 1.5s, 250ms, 40us or 100ns)";
  return std::nullopt;
}

std::optional<report::ShardSpec> parseShard(const std::string& text, std::string& error) {
  int shard = -1, shards = 0, used = 0;
  if (std::sscanf(text.c_str(), "%d/%d%n", &shard, &shards, &used) == 2 && static_cast<size_t>(used) == text.size() && shards >= 1 &&
      shards <= kMaxShards && shard >= 0 && shard < shards)
    return report::ShardSpec{.shard = shard, .shards = shards};
  error = "'" + text + "' is not a shard: I/N, shard I of N from 0 (like 0/4 to 3/4), N from 1 to " + std::to_string(kMaxShards);
  return std::nullopt;
}

namespace {

// "HH:MM:SS" with an optional fraction of a second, at text[from...]; ns since midnight.
std::optional<int64_t> timeOfDayNs(std::string_view text) {
  int hours = 0, minutes = 0, seconds = 0, used = 0;
  const std::string copy(text);
  if (std::sscanf(copy.c_str(), "%2d:%2d:%2d%n", &hours, &minutes, &seconds, &used) != 3 || used != 8) return std::nullopt;
  if (hours > 23 || minutes > 59 || seconds > 60) return std::nullopt;
  int64_t ns = ((hours * 60LL + minutes) * 60 + seconds) * 1'000'000'000LL;
  std::string_view rest = text.substr(8);
  if (!rest.empty() && rest.front() == '.') {
    rest.remove_prefix(1);
    int64_t scale = 100'000'000;
    for (; !rest.empty() && std::isdigit(static_cast<unsigned char>(rest.front())) != 0; rest.remove_prefix(1), scale /= 10)
      ns += (rest.front() - '0') * scale;
  }
  if (rest == "Z" || rest == " UTC") rest = {};
  return rest.empty() ? std::optional<int64_t>(ns) : std::nullopt;
}

}  // namespace

std::optional<report::TimePoint> parseTimePoint(const std::string& text, std::string& error) {
  using Kind = report::TimePoint::Kind;
  std::string duration_error;
  if (const auto since = parseDuration(text, duration_error)) return report::TimePoint{Kind::kSinceStart, *since};
  if (const auto of_day = timeOfDayNs(text)) return report::TimePoint{Kind::kTimeOfDay, *of_day};
  if (text.starts_with("step:")) {
    const std::string number = text.substr(5);
    if (!number.empty() && number.size() <= 9 && std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return report::TimePoint{Kind::kStep, std::stoll(number)};
    error = "'" + text + "' is not a step: give step:N, N counted from 0 as the overlap table numbers steps";
    return std::nullopt;
  }
  int year = 0, month = 0, day = 0, used = 0;
  char sep = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2d%c%n", &year, &month, &day, &sep, &used) == 4 && used == 11 &&
      (sep == 'T' || sep == ' ') && month >= 1 && month <= 12 && day >= 1 && day <= 31) {
    if (const auto of_day = timeOfDayNs(std::string_view(text).substr(11))) {
      tm date{};
      date.tm_year = year - 1900;
      date.tm_mon = month - 1;
      date.tm_mday = day;
      return report::TimePoint{Kind::kUtc, static_cast<int64_t>(timegm(&date)) * 1'000'000'000LL + *of_day};
    }
  }
  error = "'" + text + "' is not a time: give how long after the run's first process started (30s, 2min), a UTC time "
          "(2026-11-27 06:31:02, as the report's 'time' line prints it), a UTC time of day (06:31:02) or a step (step:100)";
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
