// One `commtrace` subcommand, added to the program's CLI11 app beside the code that runs it
// (addReportCommand in report_command.cc, ...): main() lists them, parses, and runs the one
// given.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tools/report_command.h"
#include "tools/watch_command.h"

namespace commtrace::tools {

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;  // once parsed: its exit status
};

// The commands, in the order `commtrace --help` lists them, each defined beside what runs it.
Command addDumpCommand(CLI::App& app);                        // dump.cc
Command addDemoCommand(CLI::App& app, std::string program);  // demo.cc; program: this binary, as run
// exchange: the report of commtrace-mpi, each process reading a shard (tools/mpi/).
Command addReportCommand(CLI::App& app, StateExchange* exchange = nullptr);  // report_command.cc
Command addDiffCommand(CLI::App& app);                        // diff_command.cc
Command addExportCommand(CLI::App& app);                      // report_command.cc
Command addMergeCommand(CLI::App& app);                       // report_command.cc
Command addWatchCommand(CLI::App& app);                       // watch_command.cc
Command addCollectCommand(CLI::App& app);                     // collect_command.cc
Command addSettingsCommand(CLI::App& app);                    // cli_command.cc

// CLI11's enum transformer would print the enum's numbers in --help and accept them: the
// options take names, mapped after parsing.
template <class Enum>
CLI::Option* addNamedOption(CLI::App* cmd, const std::string& flag, std::string& name, const std::map<std::string, Enum>& names,
                            const std::string& help) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : names) keys.push_back(key);
  return cmd->add_option(flag, name, help)->check(CLI::IsMember(keys))->capture_default_str();
}

extern const std::map<std::string, ProgressMode> kProgressModes;
void addProgressOption(CLI::App* cmd, std::string& progress);
void addJobOption(CLI::App* cmd, std::string& job);
// What report and export read: the paths, which job, and how loading shows progress.
void addRunOptions(CLI::App* cmd, std::vector<std::string>& paths, std::string& job, std::string& progress, std::string& step_range);
// --step-range's text as a rule; false, with the reason on stderr, for one that is not.
bool stepRuleFrom(const std::string& text, report::StepRule& rule);

// The live engine's options, the same for watch and collect (watch_command.cc): the seconds
// ones are taken as given and put into the rules once parsed.
struct LiveFlags {
  double window_s = 1.0;
  double hang_after_s = 5.0;
  void applyTo(WatchOptions& o) const;
};
void addLiveOptions(CLI::App* cmd, WatchOptions& o, LiveFlags& flags, const std::string& alerts_default);

}  // namespace commtrace::tools
