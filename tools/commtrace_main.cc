// The commtrace command. Subcommands grow with the project: dump today; report, export and
// demo later.
#include <CLI/CLI.hpp>
#include <iostream>

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
  return 0;
}
