// The collector's words about refused peers: the first in full, then a summary a minute at
// most however many come, and after a quiet minute the next one in full again.
#include "tools/refusal_log.h"

#include <gtest/gtest.h>

#include <sstream>

namespace commtrace::tools {
namespace {

using Clock = RefusalLog::Clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(RefusalLog, TwoThousandGarbageConnectionsAreTwoLines) {
  RefusalLog log;
  std::ostringstream err;
  const Clock::time_point t0{};
  for (int i = 0; i < 2000; ++i) {
    const std::string address = "10.0.0." + std::to_string(i % 37);
    log.note(i % 400 == 7 ? "silent" : "not a commtrace digest", i % 400 == 7 ? "silent" : "not a commtrace digest", address + ":5000",
             address, t0 + milliseconds(25 * i), err);
  }
  EXPECT_EQ(log.lines(), 1u) << err.str();
  log.tick(t0 + seconds(61), err);
  EXPECT_EQ(log.lines(), 2u);
  EXPECT_EQ(err.str(),
            "commtrace: collector: refused 10.0.0.0:5000: not a commtrace digest\n"
            "commtrace: collector: refused 1999 more connections in the last 61 s, from 37 addresses: "
            "1994 not a commtrace digest, 5 silent\n");
  log.tick(t0 + seconds(200), err);
  EXPECT_EQ(log.lines(), 2u) << "nothing untold, nothing said";
  log.note("silent", "silent", "10.0.0.1:1", "10.0.0.1", t0 + seconds(201), err);
  EXPECT_EQ(log.lines(), 3u) << "after a quiet minute the next refusal is told at once";
}

TEST(RefusalLog, AStormLastingMinutesIsALineAMinute) {
  RefusalLog log;
  std::ostringstream err;
  const Clock::time_point t0{};
  for (int i = 0; i < 10 * 60 * 10; ++i) log.note("x", "x", "p", "a", t0 + milliseconds(100 * i), err);
  EXPECT_GE(log.lines(), 10u);
  EXPECT_LE(log.lines(), 11u) << err.str();
}

}  // namespace
}  // namespace commtrace::tools
