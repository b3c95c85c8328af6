// The commtrace command. Subcommands grow with the project: dump and demo today; report and
// export later.
#include <CLI/CLI.hpp>
#include <iostream>

#include "tools/demo.h"
#include "tools/dump.h"

int main(int argc, char** argv) {
  CLI::App app{"commtrace: NCCL communication tracer — read and analyse trace files"};
  app.set_version_flag("--version", std::string(COMMTRACE_VERSION));
  app.require_subcommand(1);

  std::string dump_path;
  std::string dump_format = "text";
  CLI::App* dump = app.add_subcommand("dump", "Print every record of one trace file (.ctrace)");
  dump->add_option("file", dump_path, "trace file written by libcommtrace.so")->required()->check(CLI::ExistingFile);
  dump->add_option("--format", dump_format, "text (one line per record) or json (JSON lines)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();

  commtrace::tools::DemoOptions demo_options;
  CLI::App* demo = app.add_subcommand(
      "demo", "Play a simulated 8-rank, 2-node training job (one planted straggler, a slow link, skewed GPU clocks) through "
              "libcommtrace.so as NCCL's profiler plugin, then summarise the trace files");
  demo->add_option("--dir", demo_options.dir, "run directory; an existing one is emptied only if it holds nothing but demo files")
      ->capture_default_str();
  demo->add_option("--scenario", demo_options.scenario, "scenario file to play instead of the built-in demo.json")
      ->check(CLI::ExistingFile);
  demo->add_option("--version", demo_options.profiler_version,
                   "bind only ncclProfiler_v<N> (4: NCCL 2.27, 5: 2.28, 6: 2.29-2.30, 7: 2.31); default: the newest")
      ->check(CLI::Range(4, 7));
  demo->add_option("--plugin", demo_options.plugin, "profiler plugin to load instead of ../lib/libcommtrace.so next to this binary");

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

  if (*dump) {
    const auto format = dump_format == "json" ? commtrace::tools::DumpFormat::kJson : commtrace::tools::DumpFormat::kText;
    return commtrace::tools::dump(dump_path, format, std::cout, std::cerr);
  }
  if (*demo) return commtrace::tools::runDemo(demo_options, std::cout, std::cerr);
  return 0;
}
