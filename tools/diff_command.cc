#include "tools/diff_command.h"

#include <fstream>
#include <iostream>

#include "tools/cli_command.h"

#include "tools/report/analyses/run_diff.h"
#include "tools/report/output/run_diff_output.h"

namespace commtrace::tools {

int runDiff(const DiffOptions& options, std::ostream& out, std::ostream& err) {
  report::Report a, b;
  for (const auto& [path, r] : {std::pair<const std::string&, report::Report&>{options.run_a, a}, {options.run_b, b}}) {
    if (!analyseRun({.paths = {path}, .job = options.job, .progress = options.progress}, r, err)) {
      err << "commtrace: diff: " << path << " could not be analysed\n";
      return 1;
    }
  }
  const report::RunDiff d = report::diffReports(a, b);
  for (const std::string& w : d.warnings) err << "commtrace: diff: " << w << '\n';
  std::ofstream file;
  if (!options.out.empty()) file.open(options.out, std::ios::trunc);
  std::ostream& to = options.out.empty() ? out : file;
  if (options.json) report::writeDiffJson(d, options.run_a, options.run_b, to);
  else report::writeDiffText(d, options.run_a, options.run_b, to);
  if (!options.out.empty()) {
    file.close();
    if (!file) {
      err << "commtrace: " << options.out << ": cannot write the diff there\n";
      return 1;
    }
    out << "Wrote " << options.out << '\n';
  }
  return 0;
}

Command addDiffCommand(CLI::App& app) {
  struct Flags {
    DiffOptions options;
    std::string format = "text", progress = "auto";
  };
  const auto f = std::make_shared<Flags>();
  CLI::App* diff = app.add_subcommand("diff", "What changed between two runs, as before and after tuning: step and communication time, "
                                              "ops, ranks, culprits");
  diff->footer(
      "Both runs are analysed as `commtrace report` analyses them. Communicators are matched by name (NCCL's commName; "
      "unnamed ones by their size), ops by (communicator, func, size bucket) whatever algorithm and protocol NCCL chose "
      "(a change of those is shown); ops in one run only are marked new or gone. Culprits (stragglers, slow hosts and links) "
      "and losses (missing ranks, dropped records, mismatches) are compared by kind and subject. Runs of different rank "
      "counts, or without an op in common, are compared with a warning on stderr.\n"
      "Exit status: 0 when both runs were analysed, 1 when either could not be read or the output not written, 2 for usage errors.");
  diff->add_option("run_a", f->options.run_a, "the run before: a run directory or trace file")->required();
  diff->add_option("run_b", f->options.run_b, "the run after")->required();
  addNamedOption(diff, "--format", f->format, std::map<std::string, bool>{{"text", false}, {"json", true}},
                 "text: tables for a terminal; json: every row, schema commtrace.diff.v1");
  diff->add_option("--out", f->options.out, "write to this file instead of stdout");
  addJobOption(diff, f->options.job);
  addProgressOption(diff, f->progress);
  return {diff, [f] {
            f->options.json = f->format == "json";
            f->options.progress = kProgressModes.at(f->progress);
            return runDiff(f->options, std::cout, std::cerr);
          }};
}

}  // namespace commtrace::tools
