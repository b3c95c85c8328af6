// Plays a scenario through the NCCL driver with the real libcommtrace.so as its profiler
// plugin, for tests that hold what the report reads against the driver's ground truth.
// The test target defines NCCL_DRIVER_PATH and COMMTRACE_SO_PATH.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace commtrace::testutil {

struct DriverOptions {
  std::string extra_args;  // e.g. "--profiler-version 4"
  // Played in real time with the flusher at its shortest period, so that each file has many
  // chunks (unpaced, a run ends before the first flush and writes one).
  bool paced = false;
  double time_scale = 1;  // when paced: real seconds per simulated second
  std::string env;        // e.g. "COMMTRACE_PROXY_EVENTS=1"
};

// Runs the driver into out_dir (its log next to it, out_dir + ".log"); false if it failed.
inline bool runDriver(const std::string& scenario_path, const std::string& out_dir, const DriverOptions& o = {}) {
  const std::string command = o.env + (o.paced ? " COMMTRACE_FLUSH_MS=10 " : " ") + NCCL_DRIVER_PATH + " --scenario " +
                              scenario_path + " --plugin " + COMMTRACE_SO_PATH + " --out " + out_dir +
                              (o.paced ? " --time-scale " + std::to_string(o.time_scale) + " " : " ") + o.extra_args + " > " + out_dir +
                              ".log 2>&1";
  const int status = std::system(command.c_str());
  EXPECT_EQ(status, 0) << command;
  return status == 0;
}

// The same, returning the ground truth it wrote.
inline nlohmann::json playDriver(const std::string& scenario_path, const std::string& out_dir, const DriverOptions& o = {}) {
  runDriver(scenario_path, out_dir, o);
  std::ifstream truth(out_dir + "/ground-truth.json");
  return nlohmann::json::parse(truth);
}

}  // namespace commtrace::testutil
