#include "tools/demo.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <vector>

#include "sink/reader.h"
#include "tools/cli_command.h"
#include "tools/nccl-driver/demo_scenario.h"
#include "tools/nccl-driver/ground_truth_file.h"
#include "tools/report/format.h"
#include "tools/report_command.h"
#include "tools/trace_tally.h"

extern char** environ;

namespace commtrace::tools {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr const char* kScenarioCopy = "scenario.json";

// What a demo run leaves in its directory; anything else there is not ours to delete.
bool isDemoFile(const fs::directory_entry& e) {
  const std::string name = e.path().filename().string();
  return e.is_regular_file() && (e.path().extension() == ".ctrace" || name == driver::kGroundTruthFile || name == kScenarioCopy);
}

bool prepareDir(const fs::path& dir, std::ostream& err) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) {
      err << "commtrace: " << dir.string() << " exists and is not a directory; choose another --dir\n";
      return false;
    }
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
      if (!isDemoFile(e)) {
        err << "commtrace: " << dir.string() << " holds " << e.path().filename().string()
            << ", which no demo wrote; not touching it (choose another --dir, or empty this one)\n";
        return false;
      }
    }
    fs::remove_all(dir, ec);
  }
  fs::create_directories(dir, ec);
  if (ec) {
    err << "commtrace: " << dir.string() << ": cannot create it: " << ec.message() << '\n';
    return false;
  }
  return true;
}

// Runs the driver with COMMTRACE_DIR forced to the demo's directory; its per-rank lines
// go straight to our stdout and stderr.
int runDriver(const std::vector<std::string>& args, const fs::path& dir, std::ostream& out) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::string(*e).rfind("COMMTRACE_DIR=", 0) != 0) env.emplace_back(*e);
  env.push_back("COMMTRACE_DIR=" + dir.string());
  std::vector<char*> argv, envp;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  for (std::string& e : env) envp.push_back(e.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  out.flush();
  const pid_t pid = fork();
  if (pid == 0) {
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Spelt as the report spells durations, so that the planted truth reads like the findings.
std::string duration(uint64_t ns) { return report::fmt::duration(static_cast<double>(ns) / 1e3); }

// What the driver planted, as its ground truth (tools/nccl-driver/README.md) says it.
void printPlanted(const Json& truth, std::ostream& out) {
  const Json& planted = truth.at("planted");
  out << "Planted in '" << truth.at("scenario").get<std::string>() << "' (" << truth.at("ranks").get<int>() << " ranks on "
      << truth.at("nodes").get<int>() << " nodes, " << truth.at("steps").get<int>() << " steps):\n";
  for (const Json& st : planted.at("stragglers")) {
    const uint64_t compute_ns = st.at("extra_compute_ns").get<uint64_t>(), host_ns = st.at("extra_host_ns").get<uint64_t>();
    out << "  straggler: rank " << st.at("rank").get<int>() << " (node " << st.at("node").get<int>() << ")";
    if (compute_ns != 0) out << " computes " << duration(compute_ns) << " longer";
    if (compute_ns != 0 && host_ns != 0) out << " and";
    if (host_ns != 0) out << " launches " << duration(host_ns) << " late (its GPU idles)";
    out << " in every compute phase of steps " << st.at("steps").at(0).get<int>() << ".." << st.at("steps").at(1).get<int>() << '\n';
  }
  for (const Json& l : planted.at("slow_links")) {
    const bool between_nodes = l.contains("nodes");
    const Json& ends = l.at(between_nodes ? "nodes" : "ranks");
    out << "  slow link: " << (between_nodes ? "nodes " : "ranks ") << ends.at(0).get<int>() << " <-> " << ends.at(1).get<int>() << " at "
        << l.at("gbps").get<double>() << " GB/s (between nodes otherwise " << planted.at("inter_node_gbps").get<double>() << " GB/s)\n";
  }
  out << "  GPU clocks:";
  const Json& offsets = planted.at("clock_offsets_ns");
  const Json& drifts = planted.at("clock_drift_ppm");
  for (size_t n = 0; n < offsets.size(); ++n) {
    out << (n ? ", " : " ") << "node " << n << ' ' << std::showpos << offsets[n].get<int64_t>() << std::noshowpos << " ns";
    if (const double ppm = drifts.at(n).get<double>(); ppm != 0) out << " (" << std::showpos << ppm << std::noshowpos << " ppm)";
  }
  out << '\n';
}

// The driver's ground truth, parsed; an error line and null where it cannot be read.
Json readGroundTruth(const fs::path& path, std::ostream& err) {
  std::ifstream in(path, std::ios::binary);
  Json truth = Json::parse(in, nullptr, false);
  if (truth.is_discarded() || !truth.contains("planted")) {
    err << "commtrace: " << path.string() << ": the driver's ground truth cannot be read\n";
    return nullptr;
  }
  return truth;
}

}  // namespace

int runDemo(const DemoOptions& o, std::ostream& out, std::ostream& err) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  const fs::path driver_path = self.parent_path() / "commtrace-nccl-driver";
  const fs::path plugin = o.plugin.empty() ? (self.parent_path().parent_path() / "lib" / "libcommtrace.so").lexically_normal() : fs::path(o.plugin);
  for (const fs::path& needed : {driver_path, plugin}) {
    if (!fs::exists(needed)) {
      err << "commtrace: demo needs " << needed.string() << " (built with commtrace; see the README's build step)\n";
      return 1;
    }
  }

  std::string scenario_text = driver::kDemoScenarioJson;
  if (!o.scenario.empty()) {
    std::ifstream in(o.scenario, std::ios::binary);
    if (!in) {
      err << "commtrace: " << o.scenario << ": cannot read the scenario file\n";
      return 2;
    }
    scenario_text.assign(std::istreambuf_iterator<char>(in), {});
    // Before anything is created: the driver says what is wrong with a scenario it cannot play.
    const int checked = runDriver({driver_path.string(), "--scenario", o.scenario, "--check"}, {}, out);
    if (checked != 0) return checked == 2 ? 2 : 1;
  }

  const fs::path dir = fs::absolute(o.dir);
  if (!prepareDir(dir, err)) return 1;
  const fs::path scenario_copy = dir / kScenarioCopy;
  std::ofstream(scenario_copy) << scenario_text;

  // Played in real time (20 steps of 27.6 ms: half a second): unpaced, the CPU's clock ran a
  // step in microseconds while the GPU's ran it in milliseconds, and the run did not agree with
  // itself (its span, --from step:N, --from 10ms all read different runs).
  std::vector<std::string> args = {driver_path.string(), "--scenario", scenario_copy.string(), "--plugin", plugin.string(),
                                   "--out", dir.string(), "--time-scale", "1"};
  if (o.profiler_version != 0) args.insert(args.end(), {"--profiler-version", std::to_string(o.profiler_version)});
  const int status = runDriver(args, dir, out);
  if (status != 0) {
    err << "commtrace: the simulated job failed (" << driver_path.filename().string() << " exit status " << status
        << "); what it wrote is in " << dir.string() << '\n';
    return 1;
  }

  std::vector<fs::path> traces;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".ctrace") traces.push_back(e.path());
  std::sort(traces.begin(), traces.end());
  uint64_t colls = 0, p2ps = 0;
  for (const fs::path& path : traces) {
    TraceReader reader;
    std::string error;
    if (!reader.open(path.string(), error)) {
      err << error << '\n';
      continue;
    }
    TraceTally tally;
    DecodedChunk chunk;
    while (reader.next(chunk)) tally.add(chunk);
    colls += tally.records(RecordKind::kColl);
    p2ps += tally.records(RecordKind::kP2p);
  }
  if (traces.empty()) {
    err << "commtrace: " << plugin.string() << " wrote no trace file into " << dir.string() << "\n";
    return 1;
  }
  const Json truth = readGroundTruth(dir / driver::kGroundTruthFile, err);
  if (truth.is_null()) return 1;
  uint64_t planted_colls = 0, planted_p2ps = 0;
  for (const Json& r : truth.at("planted_ops_per_rank")) {
    planted_colls += r.at("colls").get<uint64_t>();
    planted_p2ps += r.at("p2ps").get<uint64_t>();
  }
  const std::string& program = o.program;
  out << "\n$ " << program << " report " << dir.string() << "\n\n";
  if (runReport(ReportOptions{.paths = {dir.string()}, .progress = ProgressMode::kNever}, out, err) != 0) return 1;
  out << "\nThe " << traces.size() << " trace files hold " << colls << " of " << planted_colls
      << " planted collective records (one per rank and op) and " << p2ps << " of " << planted_p2ps
      << " send/receive records.\n";
  printPlanted(truth, out);
  out << "\nGround truth: " << (dir / driver::kGroundTruthFile).string() << "\nNext: " << program << " report " << dir.string()
      << " --format html --out report.html (its icicle: exposed communication by NVTX path); " << program << " report " << dir.string()
      << " --format folded (the same, for flame-graph tools); " << program << " export --perfetto " << dir.string() << "; " << program << " dump "
      << traces.front().string() << '\n';
  if (colls != planted_colls || p2ps != planted_p2ps)
    err << "commtrace: the files hold " << colls << " collectives and " << p2ps << " sends/receives; the job made "
        << planted_colls << " and " << planted_p2ps << '\n';
  return 0;
}

Command addDemoCommand(CLI::App& app, std::string program) {
  const auto options = std::make_shared<DemoOptions>();
  options->program = std::move(program);
  CLI::App* demo = app.add_subcommand(
      "demo", "Play a simulated 8-rank, 2-node training job (one planted straggler, a slow link, skewed GPU clocks) through "
              "libcommtrace.so as NCCL's profiler plugin, then report on the run and list what was planted");
  demo->add_option("--dir", options->dir, "run directory; an existing one is emptied only if it holds nothing but demo files")
      ->capture_default_str();
  demo->add_option("--scenario", options->scenario, "scenario file to play instead of the built-in demo.json")->check(CLI::ExistingFile);
  demo->add_option("--version", options->profiler_version,
                   "bind only ncclProfiler_v<N> (4: NCCL 2.27, 5: 2.28, 6: 2.29-2.30, 7: 2.31); default: the newest")
      ->check(CLI::Range(4, 7));
  demo->add_option("--plugin", options->plugin, "profiler plugin to load instead of ../lib/libcommtrace.so next to this binary");
  return {demo, [options] { return runDemo(*options, std::cout, std::cerr); }};
}

}  // namespace commtrace::tools
