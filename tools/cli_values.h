// Values the commtrace command's options take beyond what CLI11 checks: rank lists, step
// ranges, durations and the step range. Each parser returns nullopt and sets error (one line, no prefix)
// when the text is not one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tools/report/analyses/overlap.h"
#include "tools/report/load/shard_window.h"
#include "tools/report/load/time_window.h"

namespace commtrace::tools {

// "3", "0-3,8", "0-1,4-5": global ranks, each once, ascending.
std::optional<std::vector<int>> parseRankList(const std::string& text, std::string& error);

// "5" or "10-12": the first and last step, from 0.
std::optional<std::pair<int, int>> parseStepRange(const std::string& text, std::string& error);

// "2min", "1.5s", "250ms", "40us", "100ns", "0": nanoseconds; a unit is required except for 0.
std::optional<int64_t> parseDuration(const std::string& text, std::string& error);

// One end of `report --from/--to`: a duration after the run's first process started
// recording ("30s"), a UTC date and time ("2026-11-27 06:31:02.5", "2026-11-27T06:31:02Z"),
// a UTC time of day on the run's first day ("06:31:02"), or where a step begins ("step:100").
std::optional<report::TimePoint> parseTimePoint(const std::string& text, std::string& error);

// An NVTX range name or ECMAScript regular expression naming the step range; "" is the default rule.
std::optional<report::StepRule> parseStepRule(const std::string& text, std::string& error);

// `report --shard I/N`: shard I of N, from 0 (N at most kMaxShards).
inline constexpr int kMaxShards = 1 << 16;
std::optional<report::ShardSpec> parseShard(const std::string& text, std::string& error);

}  // namespace commtrace::tools
