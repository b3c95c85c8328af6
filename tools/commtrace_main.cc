// The commtrace command: each subcommand is added beside the code that runs it
// (cli_command.h lists them); main() parses and runs the one given.
#include <malloc.h>

#include <iostream>
#include <string>
#include <vector>

#include "tools/cli_command.h"

int main(int argc, char** argv) {
  // The report's loader threads decode rows that the joining thread frees: with glibc's
  // arena per thread, freed blocks stayed scattered over the threads' arenas and the peak RSS
  // grew with the run (DDP 64 ranks x 1M collectives: 28-30 MB against 24 MB at 100k). Two
  // arenas keep it within 10 % at no cost in speed (bench/report_targets.sh, either way).
  mallopt(M_ARENA_MAX, 2);
  CLI::App app{"commtrace: NCCL communication tracer — read and analyse trace files"};
  app.set_version_flag("--version", std::string(COMMTRACE_VERSION));
  app.require_subcommand(1);
  using namespace commtrace::tools;
  const std::vector<Command> commands = {addDumpCommand(app),   addDemoCommand(app, argv[0]), addReportCommand(app), addMergeCommand(app),
                                         addDiffCommand(app),   addExportCommand(app),        addWatchCommand(app),
                                         addCollectCommand(app), addSettingsCommand(app)};

  // CLI11 reads a mistyped command as a stray argument and then asks for "a subcommand":
  // name the word it did not know instead.
  std::string known;
  bool is_command = false;
  for (const Command& c : commands) {
    known += (known.empty() ? "" : ", ") + c.app->get_name();
    is_command = is_command || (argc > 1 && c.app->get_name() == argv[1]);
  }
  if (argc > 1 && argv[1][0] != '-' && !is_command) {
    std::cerr << "commtrace: '" << argv[1] << "' is not a commtrace command (" << known << ")\nRun 'commtrace --help' for usage.\n";
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "commtrace: " << e.what() << "\nRun 'commtrace --help' for usage.\n";
    return 2;
  }
  for (const Command& c : commands)
    if (*c.app) return c.run();
  return 0;
}
