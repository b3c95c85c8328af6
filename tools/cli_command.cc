#include "tools/cli_command.h"

#include <iostream>

#include "tools/cli_values.h"
#include "tools/settings_table.h"

namespace commtrace::tools {

const std::map<std::string, ProgressMode> kProgressModes = {
    {"auto", ProgressMode::kAuto}, {"always", ProgressMode::kAlways}, {"never", ProgressMode::kNever}};

void addProgressOption(CLI::App* cmd, std::string& progress) {
  addNamedOption(cmd, "--progress", progress, kProgressModes,
                 "a progress line on stderr while the files are read: auto (when stderr is a terminal), always, never");
}

void addJobOption(CLI::App* cmd, std::string& job) {
  cmd->add_option("--job", job,
                  "when the files come from several jobs (each file names its job): read only this job's, or 'all' "
                  "to read them as one run. Without it, files of several jobs are refused with a list of the jobs");
}

void addRunOptions(CLI::App* cmd, std::vector<std::string>& paths, std::string& job, std::string& progress, std::string& step_range) {
  cmd->add_option("paths", paths,
                  "the run: directories (every *.ctrace below them, per-node subdirectories included) and trace files")
      ->required();
  addJobOption(cmd, job);
  addProgressOption(cmd, progress);
  cmd->add_option("--step-range", step_range,
                  "the NVTX range that is one training step: a name, or an ECMAScript regular expression its whole name "
                  "matches ('train_step', 'iter [0-9]+'). Default: PyTorch's ProfilerStep#N ranges where recorded, else the "
                  "most frequent top-level range that repeats, else the op sequence's repeating period")
      ->envname("COMMTRACE_STEP_RANGE");
}

bool stepRuleFrom(const std::string& text, report::StepRule& rule) {
  std::string error;
  const auto parsed = parseStepRule(text, error);
  if (!parsed) {
    std::cerr << "commtrace: --step-range " << error << "\n";
    return false;
  }
  rule = *parsed;
  return true;
}

Command addSettingsCommand(CLI::App& app) {
  CLI::App* settings = app.add_subcommand(
      "settings", "List every COMMTRACE_* environment variable libcommtrace.so reads: default, values, what it changes");
  return {settings, [] {
            std::cout << settingsMarkdown();
            return 0;
          }};
}

}  // namespace commtrace::tools
