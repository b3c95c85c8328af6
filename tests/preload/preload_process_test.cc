// The preload face's process life, in real child processes under
// LD_PRELOAD=libcommtrace.so: what the constructor sets and says, the job's identity, real
// programs that never record (same output and exit status, no file, no thread), every
// way out of a recording process (its records reach the file, its exit status does not
// change), and fork. Recording programs are tests/programs/preload_life_program.cc (C++)
// and Python scripts using tests/programs/plugin_driver.py; both record through the
// library's plugin face.
//
// Unless a test says otherwise, COMMTRACE_FLUSH_MS is 60 s: the flusher never writes on
// its own during a test, so every record in a file was written by the exit path under test.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "sink/reader.h"
#include "tests/support/run_program.h"
#include "tests/support/temp_dir.h"

namespace commtrace {
namespace {

using namespace std::chrono_literals;
using testutil::TempDir;
using Env = std::map<std::string, std::optional<std::string>>;

constexpr const char* kLibrary = COMMTRACE_SO_PATH;
constexpr const char* kLifeProgram = LIFE_PROGRAM_PATH;
constexpr const char* kProgramsDir = PROGRAMS_DIR;  // plugin_driver.py
constexpr const char* kPython = PYTHON3_PATH;       // "" when not found
constexpr const char* kMake = MAKE_PATH;
constexpr const char* kBash = BASH_PATH;
constexpr const char* kLs = LS_PATH;

constexpr uint64_t kParentComm = 0xC0DE0001;  // as in preload_life_program.cc
constexpr uint64_t kChildComm = 0xC0DE0002;
constexpr uint64_t kBurst = 100;  // collectives per recording burst

std::string libraryRealPath() {
  char real[PATH_MAX];
  return realpath(kLibrary, real) != nullptr ? real : kLibrary;
}

std::string describeStatus(int status) {
  if (status == -1) return "not run, or timed out";
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by ") + strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

std::vector<std::string> commtraceLines(const std::string& err) {
  std::vector<std::string> out;
  for (const std::string& line : testutil::linesOf(err)) {
    if (line.rfind("commtrace:", 0) == 0) out.push_back(line);
  }
  return out;
}

std::string withoutCommtraceLines(const std::string& err) {
  std::string out;
  for (const std::string& line : testutil::linesOf(err)) {
    if (line.rfind("commtrace:", 0) != 0) out += line + "\n";
  }
  return out;
}

struct Outcome {
  int status = -1;  // the raw wait status; -1 if the program could not run or timed out
  std::string out, err;
};

// A child process with stdout on a pipe (so a test can wait for a line) and stderr in a
// file of the scratch directory.
class Child {
 public:
  Child(std::vector<std::string> argv, const Env& env, const std::string& scratch)
      : err_path_(scratch + "/stderr-" + std::to_string(++count_)) {
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) return;
    std::fflush(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      for (const auto& [name, value] : env) {
        if (value) setenv(name.c_str(), value->c_str(), 1);
        else unsetenv(name.c_str());
      }
      const int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (err < 0 || chdir(scratch.c_str()) != 0 || dup2(out[1], STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0) _exit(126);
      std::vector<char*> args;
      for (std::string& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(out[1]);
    out_fd_ = out[0];
  }
  ~Child() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_fd_ >= 0) close(out_fd_);
  }

  pid_t pid() const { return pid_; }

  // Reads stdout until it holds `line` as a whole line; false at EOF or timeout.
  bool waitForLine(const std::string& line, std::chrono::milliseconds timeout = 30s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      for (const std::string& seen : testutil::linesOf(out_)) {
        if (seen == line && out_.find(line + "\n") != std::string::npos) return true;
      }
      if (!readSome(deadline)) return false;
    }
  }

  void signal(int sig) { kill(pid_, sig); }

  // Reads stdout to its end and reaps the child; one that takes longer than timeout is
  // killed and reported as -1.
  Outcome finish(std::chrono::milliseconds timeout = 60s) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (readSome(deadline)) {
    }
    Outcome o;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      const pid_t done = waitpid(pid_, &status, WNOHANG);
      if (done == pid_) {
        o.status = status;
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(2ms);
    }
    o.out = out_;
    o.err = testutil::readText(err_path_);
    return o;
  }

 private:
  bool readSome(std::chrono::steady_clock::time_point deadline) {
    if (out_fd_ < 0) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{out_fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buffer[4096];
    const ssize_t n = read(out_fd_, buffer, sizeof buffer);
    if (n <= 0) {
      close(out_fd_);
      out_fd_ = -1;
      return false;
    }
    out_.append(buffer, static_cast<size_t>(n));
    return true;
  }

  static inline int count_ = 0;
  std::string err_path_;
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string out_;
};

// One scratch directory per test: the run directory (COMMTRACE_DIR) lives in it.
class PreloadTest : public ::testing::Test {
 protected:
  std::string runDir() const { return dir_.path() + "/run"; }

  // The environment of every child: the run directory, a flusher that never writes on its
  // own, no inherited commtrace or launcher variables; the preload or not.
  Env env(bool preload, const Env& extra = {}) const {
    Env e{{"COMMTRACE_DIR", runDir()},
          {"COMMTRACE_FLUSH_MS", "60000"},
          {"LD_PRELOAD", preload ? std::optional<std::string>(kLibrary) : std::nullopt},
          {"NCCL_PROFILER_PLUGIN", std::nullopt},
          {"NVTX_INJECTION64_PATH", std::nullopt},
          {"COMMTRACE_JOB_ID", std::nullopt},
          {"TORCHELASTIC_RUN_ID", std::nullopt},
          {"SLURM_JOB_ID", std::nullopt},
          {"PYTHONPATH", kProgramsDir},
          {"PYTHONDONTWRITEBYTECODE", "1"}};
    for (const auto& [name, value] : extra) e[name] = value;
    return e;
  }

  Outcome run(const std::vector<std::string>& argv, bool preload, const Env& extra = {}) {
    return Child(argv, env(preload, extra), dir_.path()).finish();
  }

  // Runs argv until it prints "recorded", waits `after`, sends sig, and reaps it.
  Outcome runAndSignal(const std::vector<std::string>& argv, bool preload, int sig,
                       std::chrono::milliseconds after = 0ms, const Env& extra = {}) {
    Child child(argv, env(preload, extra), dir_.path());
    if (!child.waitForLine("recorded")) return child.finish(1s);
    std::this_thread::sleep_for(after);
    child.signal(sig);
    return child.finish();
  }

  std::vector<std::string> traceFiles() const {
    std::vector<std::string> files;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(runDir(), ec)) {
      if (entry.path().extension() == ".ctrace") files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    return files;
  }

  std::string writeFile(const std::string& name, const std::string& text) const {
    const std::string path = dir_.path() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  TempDir dir_;
};

// What one trace file holds: its header and the seq numbers of its collectives, per
// communicator, in file order.
struct TraceSummary {
  std::string error;
  int64_t pid = 0;
  std::string job_id;
  uint32_t flush_period_ms = 0;
  TraceReader::State state = TraceReader::State::kUnknown;
  bool exit_unseen = false;
  std::map<uint64_t, std::vector<uint64_t>> seqs;
  uint64_t dropped_colls = 0;  // collectives the writer counted as dropped, every thread's

  std::vector<uint64_t> seqsOf(uint64_t comm) const {
    const auto it = seqs.find(comm);
    return it == seqs.end() ? std::vector<uint64_t>{} : it->second;
  }
};

TraceSummary summarize(const std::string& path) {
  TraceSummary s;
  TraceReader reader;
  if (!reader.open(path, s.error)) return s;
  s.pid = reader.header().pid();
  s.job_id = reader.header().job_id();
  s.flush_period_ms = reader.header().flush_period_ms();
  s.exit_unseen = reader.header().exit_unseen();
  DecodedChunk chunk;
  std::map<uint32_t, uint64_t> drops;  // per thread: cumulative
  while (reader.next(chunk)) {
    for (const RecordSlot& r : chunk.records) {
      if (r.kind == RecordKind::kColl) s.seqs[r.payload.coll.comm_id].push_back(r.payload.coll.seq);
      const DropSummaryRecord& d = r.payload.drop_summary;
      if (r.kind == RecordKind::kDropSummary && d.dropped_kind == static_cast<uint8_t>(RecordKind::kColl))
        drops[d.thread] = std::max(drops[d.thread], d.ring_full);
    }
  }
  for (const auto& [thread, n] : drops) s.dropped_colls += n;
  for (const ReadIssue& issue : reader.issues()) s.error += issue.message + "; ";
  s.state = reader.state();
  return s;
}

std::vector<uint64_t> seqRange(uint64_t first, uint64_t n) {
  std::vector<uint64_t> out(n);
  std::iota(out.begin(), out.end(), first);
  return out;
}

std::vector<std::string> life(std::vector<std::string> args) {
  args.insert(args.begin(), kLifeProgram);
  return args;
}

// ---------------------------------------------------------------------------------------
// The constructor: settings, the variables it points at the library, what it says.

TEST_F(PreloadTest, PointsNcclAndNvtxAtTheLibraryWhenUnsetAndSaysSoOnce) {
  const std::string self = libraryRealPath();
  // The children of the first process inherit the values: they set nothing, say nothing.
  const Outcome o = run({kBash, "-c", "/bin/true; bash -c /bin/true; echo \"$NCCL_PROFILER_PLUGIN|$NVTX_INJECTION64_PATH\""},
                        true);
  ASSERT_EQ(o.status, 0) << describeStatus(o.status) << o.err;
  EXPECT_EQ(o.out, self + "|" + self + "\n");
  EXPECT_EQ(commtraceLines(o.err),
            std::vector<std::string>{"commtrace: set NCCL_PROFILER_PLUGIN and NVTX_INJECTION64_PATH to " + self})
      << o.err;
  EXPECT_TRUE(traceFiles().empty());

  // COMMTRACE_NVTX=0: NVTX is left alone, and the line says only what was set.
  const Outcome no_nvtx = run({kBash, "-c", "echo \"$NCCL_PROFILER_PLUGIN|$NVTX_INJECTION64_PATH\""}, true, {{"COMMTRACE_NVTX", "0"}});
  ASSERT_EQ(no_nvtx.status, 0) << no_nvtx.err;
  EXPECT_EQ(no_nvtx.out, self + "|\n");
  EXPECT_EQ(commtraceLines(no_nvtx.err), std::vector<std::string>{"commtrace: set NCCL_PROFILER_PLUGIN to " + self});
}

// A value someone else set (nsys, another profiler) is never changed; a process says it
// left it only when it starts recording, so shells and compilers stay quiet.
TEST_F(PreloadTest, LeavesForeignValuesAndSaysSoOnlyWhenRecording) {
  const Env foreign{{"NCCL_PROFILER_PLUGIN", "/opt/other/libnccl-profiler.so"},
                    {"NVTX_INJECTION64_PATH", "/opt/nsys/libToolsInjection64.so"}};
  const Outcome quiet = run({kBash, "-c", "echo \"$NCCL_PROFILER_PLUGIN|$NVTX_INJECTION64_PATH\""}, true, foreign);
  ASSERT_EQ(quiet.status, 0) << quiet.err;
  EXPECT_EQ(quiet.out, "/opt/other/libnccl-profiler.so|/opt/nsys/libToolsInjection64.so\n");
  EXPECT_EQ(quiet.err, "");

  const Outcome recording = run(life({"return", "0"}), true, foreign);
  ASSERT_EQ(recording.status, 0) << recording.err;
  EXPECT_EQ(commtraceLines(recording.err),
            (std::vector<std::string>{
                "commtrace: left NCCL_PROFILER_PLUGIN=/opt/other/libnccl-profiler.so as found: NCCL loads the "
                "profiler it names",
                "commtrace: left NVTX_INJECTION64_PATH=/opt/nsys/libToolsInjection64.so as found: NVTX ranges go to "
                "the tool it names, not to commtrace"}));
}

// bash defines its own getenv and setenv; its setenv, called before its main, would hide
// the inherited environment from its getenv (and so from the rest of the constructor).
// The constructor sets variables through libc's setenv, which bash imports at start-up.
TEST_F(PreloadTest, ProgramWithItsOwnSetenvKeepsTheInheritedEnvironment) {
  const std::string self = libraryRealPath();
  const Outcome o = run({kBash, "-c", "echo \"$NCCL_PROFILER_PLUGIN|$NVTX_INJECTION64_PATH|${COMMTRACE_JOB_ID-unset}\"; "
                                      "bash -c 'echo \"$NCCL_PROFILER_PLUGIN|$NVTX_INJECTION64_PATH\"'"},
                        true, {{"NVTX_INJECTION64_PATH", "/opt/nsys/libToolsInjection64.so"}, {"SLURM_JOB_ID", "77"}});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(o.out, self + "|/opt/nsys/libToolsInjection64.so|unset\n" + self + "|/opt/nsys/libToolsInjection64.so\n");
  EXPECT_EQ(commtraceLines(o.err).size(), 1u) << o.err;
}

TEST_F(PreloadTest, InheritedOwnPathIsSilentEvenWhenRecording) {
  const std::string self = libraryRealPath();
  const Outcome o = run(life({"return", "0"}), true, {{"NCCL_PROFILER_PLUGIN", self}, {"NVTX_INJECTION64_PATH", self}});
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(o.err, "");
  EXPECT_EQ(traceFiles().size(), 1u);
}

// Dlopened by NCCL (not preloaded) the constructor may run while other threads read the
// environment: it changes no variable.
TEST_F(PreloadTest, DlopenedLibraryChangesNoVariable) {
  const Outcome o = run(life({"dlopen", kLibrary}), false);
  ASSERT_EQ(o.status, 0) << describeStatus(o.status) << o.err;
  EXPECT_EQ(o.out, "NCCL_PROFILER_PLUGIN=<unset>\nNVTX_INJECTION64_PATH=<unset>\nCOMMTRACE_JOB_ID=<unset>\n");
  EXPECT_EQ(o.err, "");
  // It still records, under an id made up for this process alone.
  const auto files = traceFiles();
  ASSERT_EQ(files.size(), 1u);
  const TraceSummary trace = summarize(files[0]);
  EXPECT_EQ(trace.seqsOf(kParentComm), seqRange(0, kBurst)) << trace.error;
  EXPECT_EQ(trace.job_id.rfind("ct-", 0), 0u) << trace.job_id;
}

// Loaded as NCCL's plugin only, the library cannot see _exit. Forked children that finalize
// their communicator before _exit are recorded whole and close their files; those that do
// not leave their files unclosed (what they recorded since the last flush is lost: nothing
// can run at _exit), and the report says why such files are open, and what to do, rather
// than calling them killed.
TEST_F(PreloadTest, PluginOnlyForkedChildrenThatExitAtOnceAreRecordedIfTheyFinalizeAndExplainedIfNot) {
  constexpr int kChildren = 20;
  const Outcome finalized = run(life({"dlopen-forks", kLibrary, std::to_string(kChildren), "finalize"}), false);
  ASSERT_EQ(finalized.status, 0) << describeStatus(finalized.status) << finalized.err;
  std::vector<std::string> files = traceFiles();
  ASSERT_EQ(files.size(), kChildren + 1u);
  int children = 0;
  for (const std::string& f : files) {
    const TraceSummary t = summarize(f);
    EXPECT_EQ(t.state, TraceReader::State::kClosed) << f;
    EXPECT_TRUE(t.exit_unseen) << "written by a library that was not preloaded";
    children += t.seqsOf(kChildComm) == seqRange(0, 3);
  }
  EXPECT_EQ(children, kChildren) << "every child's 3 collectives";

  std::filesystem::remove_all(runDir());
  const Outcome quick = run(life({"dlopen-forks", kLibrary, std::to_string(kChildren), "no-finalize"}), false);
  ASSERT_EQ(quick.status, 0) << describeStatus(quick.status) << quick.err;
  files = traceFiles();
  ASSERT_EQ(files.size(), kChildren + 1u);
  const time_t an_hour_ago = time(nullptr) - 3600;  // quiet for long: left open, not being written
  for (const std::string& f : files) {
    const timespec times[2] = {{an_hour_ago, 0}, {an_hour_ago, 0}};
    utimensat(AT_FDCWD, f.c_str(), times, 0);
  }
  TempDir scratch;
  const testutil::ProgramResult json = testutil::runProgram({COMMTRACE_CLI, "report", runDir(), "--format", "json"}, scratch.path());
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_NE(json.out.find("\"files_left_open\": 20,"), std::string::npos) << json.out.substr(0, 2000);
  EXPECT_NE(json.out.find("\"files_left_open_exit_unseen\": 20,"), std::string::npos) << json.out.substr(0, 2000);
  const testutil::ProgramResult text = testutil::runProgram({COMMTRACE_CLI, "report", runDir()}, scratch.path());
  EXPECT_NE(text.out.find("Left open: 20 processes of no known rank stopped writing"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("20 of them were written by the library loaded as NCCL's plugin only, which cannot see a process leave "
                          "through _exit"),
            std::string::npos)
      << text.out;
}

TEST_F(PreloadTest, BadSettingsGetOneLineEachAndTheDefault) {
  const Env bad{{"COMMTRACE_FLUSH_MS", "abc"}, {"COMMTRACE_EXIT_FLUSH_MS", "-5"}, {"COMMTRACE_NCCL_API", "maybe"},
                {"COMMTRACE_CUDA_SYNC", "2"}};
  const Outcome o = run(life({"return", "0"}), true, bad);
  ASSERT_EQ(o.status, 0) << o.err;
  const auto lines = commtraceLines(o.err);
  const std::vector<std::string> expected = {
      "commtrace: COMMTRACE_NCCL_API=maybe is not 1/0, true/false, yes/no or on/off; using 1",
      "commtrace: COMMTRACE_CUDA_SYNC=2 is not 1/0, true/false, yes/no or on/off; using 1",
      "commtrace: COMMTRACE_EXIT_FLUSH_MS=-5 is not a whole number in [0, 60000]; using 1000",
      "commtrace: COMMTRACE_FLUSH_MS=abc is not a whole number in [10, 60000]; using 200"};
  for (const std::string& line : expected) {
    EXPECT_EQ(std::count(lines.begin(), lines.end(), line), 1) << "want once: " << line << "\n" << o.err;
  }
  const auto files = traceFiles();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(summarize(files[0]).flush_period_ms, 200u);
}

// COMMTRACE_DIR and COMMTRACE_FLUSH_MS reach the recorder from the constructor's parse.
TEST_F(PreloadTest, RunDirectoryAndFlushPeriodComeFromTheSettings) {
  const Outcome o = run(life({"return", "0"}), true, {{"COMMTRACE_FLUSH_MS", "50"}});
  ASSERT_EQ(o.status, 0) << o.err;
  const auto files = traceFiles();
  ASSERT_EQ(files.size(), 1u);
  const TraceSummary trace = summarize(files[0]);
  EXPECT_EQ(trace.flush_period_ms, 50u);
  EXPECT_EQ(trace.seqsOf(kParentComm), seqRange(0, kBurst));
}

// Without COMMTRACE_DIR, jobs started one after another in one place each get a directory
// of their own, named by the job id: a report of one never reads the other's files.
TEST_F(PreloadTest, WithoutCommtraceDirEachJobWritesIntoItsOwnDirectory) {
  for (const char* job : {"41", "42"}) {
    const Outcome o = run(life({"return", "0"}), true, {{"COMMTRACE_DIR", std::nullopt}, {"SLURM_JOB_ID", job}});
    ASSERT_EQ(o.status, 0) << o.err;
  }
  const Outcome unnamed = run(life({"job-id"}), true, {{"COMMTRACE_DIR", std::nullopt}});
  ASSERT_EQ(unnamed.status, 0) << unnamed.err;
  const std::string root = dir_.path() + "/commtrace-run/";
  const std::string generated = testutil::linesOf(unnamed.out).at(0);
  for (const std::string& job : {std::string("41"), std::string("42"), generated}) {
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(root + job)) files.push_back(entry.path().string());
    ASSERT_EQ(files.size(), 1u) << job;
    EXPECT_EQ(summarize(files[0]).job_id, job == generated ? generated : job);
  }
  EXPECT_TRUE(traceFiles().empty()) << "nothing in COMMTRACE_DIR's would-be directory";
}

// ---------------------------------------------------------------------------------------
// Identity: the job id.

TEST_F(PreloadTest, GeneratedJobIdIsSharedByEveryChild) {
  const Outcome o = run({kBash, "-c", "echo $COMMTRACE_JOB_ID; bash -c 'echo $COMMTRACE_JOB_ID'"}, true);
  ASSERT_EQ(o.status, 0) << o.err;
  const auto ids = testutil::linesOf(o.out);
  ASSERT_EQ(ids.size(), 2u) << o.out;
  EXPECT_EQ(ids[0].rfind("ct-", 0), 0u) << ids[0];
  EXPECT_EQ(ids[0], ids[1]);

  // The recording process's file header carries the id it exported.
  const Outcome job = run(life({"job-id"}), true);
  ASSERT_EQ(job.status, 0) << job.err;
  const auto files = traceFiles();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(summarize(files[0]).job_id + "\n", job.out);
  EXPECT_EQ(job.out.rfind("ct-", 0), 0u) << job.out;
}

TEST_F(PreloadTest, LauncherJobIdWinsAndNothingIsGenerated) {
  const Outcome o = run({kBash, "-c", "echo ${COMMTRACE_JOB_ID-unset}"}, true, {{"TORCHELASTIC_RUN_ID", "elastic-7"}});
  EXPECT_EQ(o.out, "unset\n");
  const Outcome job = run(life({"return", "0"}), true, {{"SLURM_JOB_ID", "4242"}});
  ASSERT_EQ(job.status, 0) << job.err;
  const auto files = traceFiles();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(summarize(files[0]).job_id, "4242");
}

// ---------------------------------------------------------------------------------------
// Real programs that never record: the same output and status, no file, no thread.

class RealProgramTest : public PreloadTest {
 protected:
  // Runs argv without and with the preload: stdout, the exit status and stderr (less the
  // constructor's own "commtrace:" lines) must be identical, and no file may appear.
  void expectSameWithAndWithoutPreload(const std::vector<std::string>& argv, int expected_exit) {
    SCOPED_TRACE(argv.back());
    const Outcome plain = run(argv, false);
    ASSERT_TRUE(WIFEXITED(plain.status) && WEXITSTATUS(plain.status) == expected_exit)
        << describeStatus(plain.status) << "\n" << plain.err;
    const Outcome preloaded = run(argv, true);
    EXPECT_EQ(preloaded.status, plain.status) << describeStatus(preloaded.status);
    EXPECT_EQ(preloaded.out, plain.out);
    EXPECT_EQ(withoutCommtraceLines(preloaded.err), plain.err);
    EXPECT_TRUE(traceFiles().empty()) << "a process that never recorded left a file";
  }
};

TEST_F(RealProgramTest, Bash) {
  expectSameWithAndWithoutPreload(
      {kBash, "-c",
       "for i in 3 1 2; do echo $i; done | sort; (exit 3); echo \"sub $?\"; x=$(echo nested | tr a-z A-Z); "
       "echo \"$x\"; /bin/true && echo ok; exec 2>&1; echo to-stderr >&2; exit 7"},
      7);
}

TEST_F(RealProgramTest, Ls) {
  expectSameWithAndWithoutPreload({kLs, "-1", kProgramsDir}, 0);
  expectSameWithAndWithoutPreload({kLs, "/no/such/path"}, 2);
}

TEST_F(RealProgramTest, Make) {
  if (kMake[0] == '\0') GTEST_SKIP() << "make not found at configure time";
  writeFile("Makefile",
            "all: out.txt\n\t@cat out.txt\n\t@sh -c 'echo from a sub-shell'\n"
            "out.txt:\n\t@echo built > out.txt\n"
            "fail:\n\t@echo failing; exit 3\n");
  expectSameWithAndWithoutPreload({kMake, "-s", "-B", "--no-print-directory", "-C", dir_.path(), "all"}, 0);
  expectSameWithAndWithoutPreload({kMake, "-s", "--no-print-directory", "-C", dir_.path(), "fail"}, 2);
}

// Threads, and multiprocessing by fork (the child leaves through os._exit) and by spawn (a
// fresh interpreter through exec), with a Pool. Each process prints how many threads it
// has: the preload must add none.
TEST_F(RealProgramTest, PythonThreadsAndMultiprocessing) {
  if (kPython[0] == '\0') GTEST_SKIP() << "python3 not found at configure time";
  const std::string script = writeFile("threads_and_processes.py", R"(
import multiprocessing as mp, os, sys, threading, time

def threads():
    # Thread.join returns before the OS thread is gone: give finished threads a moment.
    for _ in range(200):
        n = len(os.listdir('/proc/self/task'))
        if n == 1:
            break
        time.sleep(0.01)
    return n

def report(queue, tag):
    queue.put((tag, 'child threads', threads()))

if __name__ == '__main__':
    print('main threads', threads())
    workers = [threading.Thread(target=lambda i=i: print('thread', i, flush=True)) for i in range(4)]
    for w in workers: w.start(); w.join()
    for method in ('fork', 'spawn'):
        ctx = mp.get_context(method)
        queue = ctx.Queue()
        child = ctx.Process(target=report, args=(queue, method))
        child.start()
        print(*queue.get())
        child.join()
        print(method, 'exit code', child.exitcode)
    with mp.get_context('fork').Pool(2) as pool:
        print(sorted(pool.map(abs, [-3, 1, -2])))
    print('main threads', threads())
    sys.exit(5)
)");
  expectSameWithAndWithoutPreload({kPython, script}, 5);
}

// ---------------------------------------------------------------------------------------
// Ways out of a recording process: the status without commtrace, every record in the file.

class ExitPathTest : public PreloadTest {
 protected:
  // The one trace file holds exactly the first burst of kParentComm, and is closed: every
  // way out but SIGKILL lets the writer mark its last chunk (a report tells a finished
  // process from one still writing, or killed, by it).
  void expectFirstBurstInTheFile(TraceReader::State state = TraceReader::State::kClosed) {
    const auto files = traceFiles();
    ASSERT_EQ(files.size(), 1u);
    TraceSummary trace = summarize(files[0]);
    EXPECT_EQ(trace.error, "");
    EXPECT_EQ(trace.seqsOf(kParentComm), seqRange(0, kBurst)) << "records lost on the way out";
    EXPECT_EQ(trace.state, state) << "0 closed, 1 open, 2 unknown";
  }

  void expectExitPath(const std::vector<std::string>& args, int expected_exit) {
    const Outcome plain = run(life(args), false);
    ASSERT_TRUE(WIFEXITED(plain.status) && WEXITSTATUS(plain.status) == expected_exit) << describeStatus(plain.status);
    const Outcome preloaded = run(life(args), true);
    EXPECT_EQ(preloaded.status, plain.status) << describeStatus(preloaded.status) << "\n" << preloaded.err;
    EXPECT_EQ(preloaded.out, plain.out);
    expectFirstBurstInTheFile();
  }

  void expectSignalPath(int sig) {
    const Outcome plain = runAndSignal(life({"wait-for-signal"}), false, sig);
    ASSERT_TRUE(WIFSIGNALED(plain.status) && WTERMSIG(plain.status) == sig) << describeStatus(plain.status);
    const Outcome preloaded = runAndSignal(life({"wait-for-signal"}), true, sig);
    EXPECT_EQ(preloaded.status, plain.status) << describeStatus(preloaded.status) << "\n" << preloaded.err;
    expectFirstBurstInTheFile();
  }
};

TEST_F(ExitPathTest, ReturnFromMain) { expectExitPath({"return", "7"}, 7); }
TEST_F(ExitPathTest, ExitFromAnotherThread) { expectExitPath({"exit-from-thread", "5"}, 5); }
TEST_F(ExitPathTest, UnderscoreExit) { expectExitPath({"_exit", "9"}, 9); }
TEST_F(ExitPathTest, UnderscoreCapitalExit) { expectExitPath({"_Exit", "11"}, 11); }

// The old image's records are flushed before exec replaces it; the trace file does not
// leak into the new program (O_CLOEXEC), which records nothing and leaves no file.
TEST_F(ExitPathTest, ExecFlushesFirst) {
  for (const char* fn : {"execve", "execv", "execvp", "execvpe"}) {
    SCOPED_TRACE(fn);
    std::filesystem::remove_all(runDir());
    expectExitPath({"exec", fn, "4"}, 4);
    if (HasFatalFailure()) return;
  }
}

TEST_F(ExitPathTest, SigtermDefaultAction) { expectSignalPath(SIGTERM); }
TEST_F(ExitPathTest, SigintDefaultAction) { expectSignalPath(SIGINT); }
TEST_F(ExitPathTest, SighupDefaultAction) { expectSignalPath(SIGHUP); }

// The program's own SA_SIGINFO handler gets the signal with its siginfo (sender and all)
// after the flush, and decides the exit status (here through _exit, itself wrapped).
TEST_F(ExitPathTest, SigtermChainsToTheProgramsSiginfoHandler) {
  const Outcome plain = runAndSignal(life({"siginfo-handler"}), false, SIGTERM);
  ASSERT_TRUE(WIFEXITED(plain.status) && WEXITSTATUS(plain.status) == 40 + SIGTERM) << describeStatus(plain.status);
  const Outcome preloaded = runAndSignal(life({"siginfo-handler"}), true, SIGTERM);
  EXPECT_EQ(preloaded.status, plain.status) << describeStatus(preloaded.status) << "\n" << preloaded.err;
  expectFirstBurstInTheFile();
}

// An ignored signal stays ignored: no handler is installed over SIG_IGN.
TEST_F(ExitPathTest, IgnoredSignalStaysIgnored) {
  // bash -c 'trap "" HUP; exec ...': the program starts with SIGHUP ignored.
  const std::string command = "trap '' HUP; exec " + std::string(kLifeProgram) + " wait-for-signal";
  Child child({kBash, "-c", command}, env(true), dir_.path());
  ASSERT_TRUE(child.waitForLine("recorded"));
  child.signal(SIGHUP);
  std::this_thread::sleep_for(200ms);
  child.signal(SIGTERM);
  const Outcome o = child.finish();
  EXPECT_TRUE(WIFSIGNALED(o.status) && WTERMSIG(o.status) == SIGTERM) << describeStatus(o.status);
  expectFirstBurstInTheFile();
}

// SIGKILL cannot be caught: what the flusher wrote before it is all there is, and it
// writes every COMMTRACE_FLUSH_MS, so at most one period of records is lost.
TEST_F(ExitPathTest, SigkillLosesAtMostOneFlushPeriod) {
  const Outcome o = runAndSignal(life({"wait-for-signal"}), true, SIGKILL, 1000ms, {{"COMMTRACE_FLUSH_MS", "50"}});
  ASSERT_TRUE(WIFSIGNALED(o.status) && WTERMSIG(o.status) == SIGKILL) << describeStatus(o.status);
  expectFirstBurstInTheFile(TraceReader::State::kOpen);
}

// ---------------------------------------------------------------------------------------
// Resource limits: what the library cannot have it goes without; the host goes on as it
// would without commtrace.

// At a process limit no thread starts, the flusher's neither: one line says this process is
// not recorded, and no file is left (a header alone reads as a process killed at its start).
TEST_F(PreloadTest, AtAProcessLimitTheHostRunsOnUnrecorded) {
  std::filesystem::create_directories(runDir());
  for (const std::string& dir : {dir_.path(), runDir()})
    std::filesystem::permissions(dir, std::filesystem::perms::all);  // writable by nobody, when run as root
  const Outcome plain = run(life({"no-threads", "6"}), false);
  ASSERT_TRUE(WIFEXITED(plain.status) && WEXITSTATUS(plain.status) == 6) << describeStatus(plain.status) << plain.err;
  const Outcome preloaded = run(life({"no-threads", "6"}), true);
  EXPECT_EQ(preloaded.status, plain.status) << describeStatus(preloaded.status) << "\n" << preloaded.err;
  const std::vector<std::string> lines = commtraceLines(preloaded.err);
  const auto not_recorded = std::count_if(lines.begin(), lines.end(), [](const std::string& l) { return l.find("not recorded") != std::string::npos; });
  EXPECT_EQ(not_recorded, 1) << preloaded.err;
  EXPECT_EQ(withoutCommtraceLines(preloaded.err), "");
  EXPECT_TRUE(traceFiles().empty());
}

// Under an address-space limit rings and the recorder's own allocations fail: the host's
// 200 threads run, and its exit status is its own.
TEST_F(PreloadTest, UnderAnAddressSpaceLimitTheHostRunsOn) {
  const Outcome plain = run(life({"little-memory", "4"}), false);
  ASSERT_TRUE(WIFEXITED(plain.status) && WEXITSTATUS(plain.status) == 4) << describeStatus(plain.status) << plain.err;
  const Outcome preloaded = run(life({"little-memory", "4"}), true);
  EXPECT_EQ(preloaded.status, plain.status) << describeStatus(preloaded.status) << "\n" << preloaded.err;
  EXPECT_EQ(withoutCommtraceLines(preloaded.err), "");
}

// A thread that records and exits gives its ring back, and the rings of all threads stay
// within COMMTRACE_RING_MEMORY_MB: 1,000 threads in turn held 2 MiB each for good (2 GB).
// What a thread could not have a ring for is counted as dropped, never lost unsaid.
TEST_F(PreloadTest, ShortLivedThreadsGiveTheirRingsBack) {
  constexpr int kThreads = 1000;
  const Outcome o = run(life({"short-threads", std::to_string(kThreads)}), true, {{"COMMTRACE_RING_MEMORY_MB", "32"}});
  ASSERT_EQ(o.status, 0) << describeStatus(o.status) << o.err;
  long peak_mb = -1;
  ASSERT_EQ(std::sscanf(o.out.c_str(), "peak_rss_mb %ld", &peak_mb), 1) << o.out;
  EXPECT_LT(peak_mb, 32 + 64) << "rings of exited threads kept";
  const auto files = traceFiles();
  ASSERT_EQ(files.size(), 1u);
  const TraceSummary trace = summarize(files[0]);
  EXPECT_EQ(trace.error, "");
  const size_t recorded = trace.seqsOf(kParentComm).size();
  EXPECT_EQ(recorded + trace.dropped_colls, static_cast<size_t>(kThreads)) << recorded << " recorded";
  EXPECT_GT(recorded, static_cast<size_t>(kThreads) / 2);
}

// ---------------------------------------------------------------------------------------
// Fork: a child never writes into its parent's file, never inherits the parent's recorder.

struct ForkReport {
  int64_t parent = 0, child = 0;
  int child_status = -1;
};

ForkReport parseForkReport(const std::string& out) {
  ForkReport r;
  long long parent = 0, child = 0;
  int status = -1;
  if (std::sscanf(out.c_str(), "parent %lld\nchild %lld status %d", &parent, &child, &status) == 3) {
    r = {parent, child, status};
  }
  return r;
}

TEST_F(PreloadTest, ForkedChildThatRecordsWritesOnlyItsOwnFile) {
  const Outcome o = run(life({"fork", "record"}), true);
  ASSERT_EQ(o.status, 0) << describeStatus(o.status) << o.err;
  const ForkReport pids = parseForkReport(o.out);
  ASSERT_EQ(pids.child_status, 0) << o.out;
  const auto files = traceFiles();
  ASSERT_EQ(files.size(), 2u);
  std::map<int64_t, TraceSummary> by_pid;
  for (const std::string& file : files) {
    TraceSummary s = summarize(file);
    EXPECT_EQ(s.error, "") << file;
    by_pid[s.pid] = s;
  }
  ASSERT_EQ(by_pid.count(pids.parent), 1u);
  ASSERT_EQ(by_pid.count(pids.child), 1u);
  // The parent's first burst was still in its ring (unflushed) when it forked.
  EXPECT_EQ(by_pid[pids.parent].seqs, (std::map<uint64_t, std::vector<uint64_t>>{{kParentComm, seqRange(0, 2 * kBurst)}}));
  EXPECT_EQ(by_pid[pids.child].seqs, (std::map<uint64_t, std::vector<uint64_t>>{{kChildComm, seqRange(0, kBurst)}}));
  EXPECT_EQ(by_pid[pids.parent].job_id, by_pid[pids.child].job_id);
}

// The child's exit runs the library's destructor: with the parent's recorder forgotten it
// has nothing to stop (joining the parent's flusher thread would hang: it does not exist
// in the child), and it creates no file.
TEST_F(PreloadTest, ForkedChildThatDoesNotRecordCreatesNoFile) {
  Child child(life({"fork", "idle"}), env(true), dir_.path());
  const Outcome o = child.finish(20s);
  ASSERT_EQ(o.status, 0) << describeStatus(o.status) << o.err;
  const ForkReport pids = parseForkReport(o.out);
  EXPECT_EQ(pids.child_status, 0) << o.out;
  const auto files = traceFiles();
  ASSERT_EQ(files.size(), 1u);
  const TraceSummary parent = summarize(files[0]);
  EXPECT_EQ(parent.pid, pids.parent);
  EXPECT_EQ(parent.seqsOf(kParentComm), seqRange(0, 2 * kBurst));
}

// ---------------------------------------------------------------------------------------
// Python: its own SIGTERM handler, its fork children's os._exit.

class PythonTest : public PreloadTest {
 protected:
  void SetUp() override {
    if (kPython[0] == '\0') GTEST_SKIP() << "python3 not found at configure time";
  }
};

// Python's handler runs (and decides the exit status); the records are in the file.
TEST_F(PythonTest, SigtermWithAPythonHandlerExitsWithItsStatus) {
  const std::string script = writeFile("sigterm_handler.py", R"(
import signal, sys, time, plugin_driver
signal.signal(signal.SIGTERM, lambda *args: sys.exit(3))
plugin_driver.record(0xC0DE0001, 0, 100)
print('recorded', flush=True)
while True:
    time.sleep(1)
)");
  const Outcome plain = runAndSignal({kPython, script}, false, SIGTERM);
  ASSERT_TRUE(WIFEXITED(plain.status) && WEXITSTATUS(plain.status) == 3) << describeStatus(plain.status) << plain.err;
  const Outcome preloaded = runAndSignal({kPython, script}, true, SIGTERM);
  EXPECT_EQ(preloaded.status, plain.status) << describeStatus(preloaded.status) << "\n" << preloaded.err;
  const auto files = traceFiles();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(summarize(files[0]).seqsOf(kParentComm), seqRange(0, kBurst));
}

// Python's default for SIGTERM is the default action: killed, and the records are there
// only because the handler flushed them.
TEST_F(PythonTest, SigtermDefaultActionInPython) {
  const std::string script = writeFile("sigterm_default.py", R"(
import time, plugin_driver
plugin_driver.record(0xC0DE0001, 0, 100)
print('recorded', flush=True)
while True:
    time.sleep(1)
)");
  const Outcome preloaded = runAndSignal({kPython, script}, true, SIGTERM);
  EXPECT_TRUE(WIFSIGNALED(preloaded.status) && WTERMSIG(preloaded.status) == SIGTERM)
      << describeStatus(preloaded.status) << "\n" << preloaded.err;
  const auto files = traceFiles();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(summarize(files[0]).seqsOf(kParentComm), seqRange(0, kBurst));
}

// Ctrl-C: Python's SIGINT handler raises KeyboardInterrupt, the program unwinds (here
// recording a second burst in a finally block), and CPython ends by re-raising SIGINT
// under the default action after its finalization, so no C destructor runs: the first
// burst was flushed by our handler; what is recorded during the unwinding is written only
// if a flush period passes (at most one period lost, as for SIGKILL).
TEST_F(PythonTest, SigintInPythonKeepsWhatWasRecordedBeforeIt) {
  const std::string script = writeFile("sigint.py", R"(
import time, plugin_driver
plugin_driver.record(0xC0DE0001, 0, 100)
print('recorded', flush=True)
try:
    while True:
        time.sleep(1)
finally:
    plugin_driver.record(0xC0DE0001, 100, 100)
)");
  // As from a terminal: the test's children may start with SIGINT ignored (a shell's
  // background job), which Python and commtrace would both leave alone.
  const std::string command = "trap - INT; exec " + std::string(kPython) + " " + script;
  const Outcome plain = runAndSignal({kBash, "-c", command}, false, SIGINT);
  ASSERT_TRUE(WIFSIGNALED(plain.status) && WTERMSIG(plain.status) == SIGINT) << describeStatus(plain.status) << plain.err;
  const Outcome preloaded = runAndSignal({kBash, "-c", command}, true, SIGINT);
  EXPECT_EQ(preloaded.status, plain.status) << describeStatus(preloaded.status) << "\n" << preloaded.err;
  const auto files = traceFiles();
  ASSERT_EQ(files.size(), 1u);
  const std::vector<uint64_t> seqs = summarize(files[0]).seqsOf(kParentComm);
  ASSERT_GE(seqs.size(), kBurst);
  EXPECT_EQ(std::vector<uint64_t>(seqs.begin(), seqs.begin() + kBurst), seqRange(0, kBurst));
  std::printf("records made during the KeyboardInterrupt unwinding that reached the file: %zu of %llu\n",
              seqs.size() - kBurst, static_cast<unsigned long long>(kBurst));
}

// The way a torchrun worker is ended, with its collectives made through the NCCL API
// wrappers (ctypes calls resolved through the process's global scope, as libtorch's are):
// the fake libnccl.so.2 behind them, nranks = 1 so the wrappers record every call.
TEST_F(PythonTest, SigtermDefaultActionThroughTheNcclWrappers) {
  const std::string script = writeFile("nccl_wrappers_sigterm.py", R"(
import ctypes, os, time

class UniqueId(ctypes.Structure):
    _fields_ = [('internal', ctypes.c_char * 128)]

ctypes.CDLL(os.environ['FAKE_NCCL'], mode=ctypes.RTLD_GLOBAL)
nccl = ctypes.CDLL(None)
nccl.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, UniqueId, ctypes.c_int]
nccl.ncclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                               ctypes.c_void_p, ctypes.c_void_p]
comm = ctypes.c_void_p()
assert nccl.ncclCommInitRank(ctypes.byref(comm), 1, UniqueId(b'process-life'), 0) == 0
buffer = ctypes.create_string_buffer(4096)
for _ in range(100):
    assert nccl.ncclAllReduce(buffer, buffer, 1024, 7, 0, comm, None) == 0  # ncclFloat32, ncclSum
print('recorded', flush=True)
while True:
    time.sleep(1)
)");
  const Env fake{{"FAKE_NCCL", FAKE_NCCL_PATH}};
  const Outcome plain = runAndSignal({kPython, script}, false, SIGTERM, 0ms, fake);
  ASSERT_TRUE(WIFSIGNALED(plain.status) && WTERMSIG(plain.status) == SIGTERM) << describeStatus(plain.status) << plain.err;
  const Outcome preloaded = runAndSignal({kPython, script}, true, SIGTERM, 0ms, fake);
  EXPECT_EQ(preloaded.status, plain.status) << describeStatus(preloaded.status) << "\n" << preloaded.err;
  const auto files = traceFiles();
  ASSERT_EQ(files.size(), 1u);
  const TraceSummary trace = summarize(files[0]);
  ASSERT_EQ(trace.seqs.size(), 1u) << "one communicator";
  EXPECT_EQ(trace.seqs.begin()->second.size(), kBurst) << trace.error;
}

// A multiprocessing fork child leaves through os._exit (no destructors): the _exit wrapper
// flushes its file. The parent never recorded: one file, the child's.
TEST_F(PythonTest, MultiprocessingForkChildLeavingThroughOsExitKeepsItsRecords) {
  const std::string script = writeFile("fork_child_records.py", R"(
import multiprocessing as mp, os, plugin_driver

def child():
    plugin_driver.record(0xC0DE0002, 0, 100)

if __name__ == '__main__':
    p = mp.get_context('fork').Process(target=child)
    p.start()
    p.join()
    print(os.getpid(), p.pid, p.exitcode)
)");
  const Outcome o = run({kPython, script}, true);
  ASSERT_EQ(o.status, 0) << describeStatus(o.status) << o.err;
  long long parent = 0, child = 0;
  int exit_code = -1;
  ASSERT_EQ(std::sscanf(o.out.c_str(), "%lld %lld %d", &parent, &child, &exit_code), 3) << o.out;
  EXPECT_EQ(exit_code, 0);
  const auto files = traceFiles();
  ASSERT_EQ(files.size(), 1u);
  const TraceSummary trace = summarize(files[0]);
  EXPECT_EQ(trace.pid, child);
  EXPECT_EQ(trace.seqs, (std::map<uint64_t, std::vector<uint64_t>>{{kChildComm, seqRange(0, kBurst)}}));
}

}  // namespace
}  // namespace commtrace
