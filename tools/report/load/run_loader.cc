#include "tools/report/load/kineto_trace.h"
#include "tools/report/load/run_loader.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <thread>
#include <variant>
#include <vector>

#include "core/clock.h"
#include "tools/report/format.h"
#include "tools/report/load/lockstep_reader.h"
#include "tools/report/load/op_joiner.h"
#include "tools/report/load/op_stream.h"
#include "tools/report/load/process_reader.h"
#include "tools/report/load/progress_line.h"
#include "tools/report/load/run_model_sink.h"
#include "tools/report/load/step_pattern.h"

namespace commtrace::report {
namespace {

namespace fs = std::filesystem;

constexpr unsigned kMaxLoaderThreads = 4;

struct TraceFileEntry {
  std::string path;
  uint64_t size = 0;
};

// The trace files a path names: itself, or every *.ctrace below a directory; false with a
// message when it names nothing to read.
bool listTraceFiles(const std::string& path, std::vector<TraceFileEntry>& files, std::ostream& err) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    err << "commtrace: cannot access " << path << ": " << ec.message() << '\n';
    return false;
  }
  if (!fs::exists(status)) {
    err << "commtrace: " << path << ": no such file or directory\n";
    return false;
  }
  if (!fs::is_directory(status)) {
    files.push_back({path, static_cast<uint64_t>(fs::file_size(path, ec))});
    return true;
  }
  // commtrace's files; a directory without any is read for PyTorch profiler traces instead.
  const size_t before = files.size();
  for (bool kineto : {false, true}) {
    for (fs::recursive_directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code file_ec;
      const std::string name = it->path().string();
      const bool wanted = kineto ? looksLikeKinetoTrace(name) : it->path().extension() == ".ctrace";
      if (!wanted || !it->is_regular_file(file_ec)) continue;
      files.push_back({name, static_cast<uint64_t>(it->file_size(file_ec))});
    }
    if (ec) {
      err << "commtrace: cannot read directory " << path << ": " << ec.message() << '\n';
      return false;
    }
    if (files.size() > before) return true;
  }
  err << "commtrace: " << path << " has no trace files (*.ctrace, or PyTorch profiler traces *.json, *.json.gz)\n";
  return false;
}

// Every path's files, in path order, each file once however it was named (relative,
// absolute, through a link).
bool listTraceFiles(const std::vector<std::string>& paths, std::vector<TraceFileEntry>& files, std::ostream& err) {
  for (const std::string& path : paths) {
    if (!listTraceFiles(path, files, err)) return false;
  }
  std::vector<std::pair<std::string, size_t>> by_file;  // canonical path, index
  for (size_t i = 0; i < files.size(); ++i) {
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(files[i].path, ec);
    by_file.emplace_back(ec ? files[i].path : canonical.string(), i);
  }
  std::sort(by_file.begin(), by_file.end());
  std::vector<TraceFileEntry> unique;
  for (size_t i = 0; i < by_file.size(); ++i) {
    if (i == 0 || by_file[i].first != by_file[i - 1].first) unique.push_back(files[by_file[i].second]);
  }
  files = std::move(unique);
  return !files.empty();
}

// How the report names what it read: the one path, or all of them.
std::string describePaths(const std::vector<std::string>& paths) {
  std::string out;
  for (const std::string& p : paths) out += (out.empty() ? "" : ", ") + p;
  return out;
}

// A readable file and what its header says.
struct AdmittedFile {
  TraceFileEntry file;
  ProcessInfo info;
};

// Opens every file once for its header; unreadable ones are listed with the reader's reason.
std::vector<AdmittedFile> admitFiles(const std::vector<TraceFileEntry>& files, RunModel& run) {
  std::vector<AdmittedFile> admitted;
  for (const TraceFileEntry& file : files) {
    TraceReader reader;
    std::string error;
    if (!reader.open(file.path, error)) {
      run.skipped_files.push_back(error);
      continue;
    }
    AdmittedFile& a = admitted.emplace_back(AdmittedFile{file, {}});
    describeProcess(reader.header(), file.path, a.info);
  }
  return admitted;
}

// What one job contributed to the files read, for the message that asks to choose.
struct JobFiles {
  size_t files = 0;
  std::set<std::string> hosts;
  int lowest_rank = INT32_MAX, highest_rank = -1;
  std::set<int> ranks;
};

void describeJobs(const std::map<std::string, JobFiles>& jobs, std::ostream& err) {
  constexpr size_t kListed = 12;
  size_t listed = 0, self_named = 0;
  err << "commtrace: these files come from " << jobs.size()
      << " jobs, which are never merged silently; choose one with --job ID, or read them all as one run with --job "
      << kAllJobs << ":\n";
  for (const auto& [id, job] : jobs) {
    self_named += job.files == 1 && id.rfind("ct-", 0) == 0;
    if (listed++ == kListed) err << "  ... and " << jobs.size() - kListed << " more\n";
    if (listed > kListed) continue;
    err << "  " << id << ": " << job.files << (job.files == 1 ? " file" : " files");
    if (job.highest_rank >= 0) err << ", ranks " << job.lowest_rank << "-" << job.highest_rank;
    err << ", " << job.hosts.size() << (job.hosts.size() == 1 ? " host" : " hosts") << '\n';
  }
  if (self_named > 1) {
    err << "  " << self_named << " processes named a job of their own (ct-...): no launcher job id reached them. Set "
           "COMMTRACE_JOB_ID to one value for the whole job, or preload the launcher too.\n";
  }
}

// Files of several jobs never merge silently: a directory two jobs wrote into, or two jobs'
// directories named together, would read as one job with the ranks of both. Keeps the
// chosen job's files; false with the reason on err.
// --job all over jobs that share rank numbers: read as one run, but each of those ranks is
// then two processes, and the tables by rank mix the jobs. Said once, with one rank as example.
void warnOfSharedRanks(const std::map<std::string, JobFiles>& jobs, std::ostream& err) {
  std::map<int, std::string> first_job;  // rank -> the first job that has it
  for (const auto& [id, job] : jobs)
    for (const int rank : job.ranks) {
      const auto [it, fresh] = first_job.try_emplace(rank, id);
      if (fresh) continue;
      err << "commtrace: --job all reads " << jobs.size() << " jobs as one run, and they share rank numbers (rank " << rank
          << " is in job " << it->second << " and in job " << id
          << "): each such rank is two processes, and the tables by rank mix the jobs; --job ID reads one\n";
      return;
    }
}

bool keepOneJob(const std::string& wanted, std::vector<AdmittedFile>& admitted, std::ostream& err) {
  std::map<std::string, JobFiles> jobs;
  for (const AdmittedFile& a : admitted) {
    JobFiles& job = jobs[a.info.job_id];
    ++job.files;
    job.hosts.insert(a.info.host);
    if (a.info.rank >= 0) {
      job.lowest_rank = std::min(job.lowest_rank, a.info.rank);
      job.highest_rank = std::max(job.highest_rank, a.info.rank);
      job.ranks.insert(a.info.rank);
    }
  }
  if (wanted == kAllJobs) {
    if (jobs.size() > 1) warnOfSharedRanks(jobs, err);
    return true;
  }
  if (wanted.empty()) {
    if (jobs.size() <= 1) return true;
    describeJobs(jobs, err);
    return false;
  }
  if (!jobs.count(wanted)) {
    err << "commtrace: no file here belongs to job " << wanted << "; the files name " << jobs.size()
        << (jobs.size() == 1 ? " job: " : " jobs: ");
    size_t n = 0;
    for (const auto& [id, job] : jobs) err << (n++ == 0 ? "" : ", ") << id;
    err << '\n';
    return false;
  }
  std::erase_if(admitted, [&](const AdmittedFile& a) { return a.info.job_id != wanted; });
  return true;
}

void keepFile(FileDone& done, RunModel& run) {
  ProcessInfo& info = run.processes[static_cast<size_t>(done.process)];
  if (!done.opened) {  // readable a moment ago, when the run was listed
    info.damaged = true;
    info.issues.push_back(done.error);
    return;
  }
  info = std::move(done.info);
  run.timelines[static_cast<size_t>(done.process)] = std::move(done.timeline);
}

// Member views are most of the model: one per collective record (plus the seats of ranks
// that recorded nothing). Once the first file is in, the run's records are extrapolated
// from the bytes read so far and reserved at once, so that the vector need not double
// (and copy) its way up to hundreds of MB.
void reserveMembers(RunModel& run, uint64_t coll_rows, uint64_t bytes_done, uint64_t total_bytes) {
  if (bytes_done == 0) return;
  const double expected = static_cast<double>(coll_rows) * static_cast<double>(total_bytes) / static_cast<double>(bytes_done);
  run.members.reserve(std::max(run.members.size(), static_cast<size_t>(expected * 1.05)));
}

// Reader threads decode the files (most of the work: as many threads as cores, up to
// kMaxLoaderThreads), in step; this thread joins what they deliver, in the order it arrives.
void readAndJoin(const std::vector<TraceFileEntry>& files, uint64_t total_bytes, const ProcessReadOptions& options,
                 OpJoiner& joiner, RunModel& run, ProgressLine& progress) {
  std::vector<std::string> paths;
  for (const TraceFileEntry& f : files) paths.push_back(f.path);
  const unsigned cores = loaderThreads();
  SharedNames names(run.names);
  uint64_t bytes_done = 0, coll_rows = 0;
  int files_done = 0;
  bool reserved = false;
  FileLeads leads(paths.size());
  joiner.countLeadsIn(&leads);
  readInLockstep(paths, names, options, cores, openFileBudget(), [&](LoadMessage& message) {
    if (auto* batch = std::get_if<RecordBatch>(&message)) {
      joiner.add(*batch);
      bytes_done += batch->file_bytes;
      coll_rows += batch->colls.size();
    } else {
      FileDone& done = *std::get<std::unique_ptr<FileDone>>(message);
      bytes_done += done.file_bytes;
      ++files_done;
      keepFile(done, run);
      if (!reserved && run.ops_kept) reserveMembers(run, coll_rows, bytes_done, total_bytes);
      reserved = true;
    }
    progress.update(files_done, bytes_done);
  }, &leads);
  joiner.countLeadsIn(nullptr);
}

// PyTorch profiler traces are read by their own reader, never mixed with commtrace's files.
// true when the files were such traces (run holds them, or is empty when none could be
// read, err saying why) or a mix that cannot be read together.
bool readsAsKineto(const std::vector<TraceFileEntry>& files, std::ostream& err, RunModel& run) {
  size_t kineto = 0;
  for (const TraceFileEntry& f : files) kineto += looksLikeKinetoTrace(f.path);
  if (kineto == 0) return false;
  if (kineto != files.size()) {
    err << "commtrace: " << run.dir << " mixes PyTorch profiler traces (*.json) with commtrace's files; report them separately\n";
    return true;
  }
  std::vector<std::string> paths;
  for (const TraceFileEntry& f : files) paths.push_back(f.path);
  const std::string dir = run.dir;
  if (!loadKinetoRun(paths, run, err)) run.processes.clear();
  run.dir = dir;
  return true;
}

// The process whose inferred steps number a step window: the lowest global rank's first life.
const ProcessInfo* stepReference(const RunModel& run) {
  const ProcessInfo* best = nullptr;
  for (const ProcessInfo& p : run.processes)
    if (p.rank >= 0 && (best == nullptr || std::tie(p.rank, p.restart_count) < std::tie(best->rank, best->restart_count))) best = &p;
  return best;
}

// --from/--to step:N as times: where those steps of the reference process begin (its NVTX
// step ranges, else as its ops repeat); --to one past its last step is the end of the run. false, with the reason, where they cannot be placed.
bool resolveSteps(const TimeWindowSpec& spec, const std::function<bool(std::string_view)>& step_range, RunModel& run, std::ostream& err) {
  struct Asked {
    const char* flag;
    int64_t step;
    bool to;
  };
  std::vector<Asked> asked;
  if (spec.from.kind == TimePoint::Kind::kStep) asked.push_back({"--from", spec.from.ns, false});
  if (spec.to.kind == TimePoint::Kind::kStep) asked.push_back({"--to", spec.to.ns, true});
  if (asked.empty()) return true;
  const ProcessInfo* ref = stepReference(run);
  if (ref == nullptr) {
    err << "commtrace: " << asked[0].flag << " step:" << asked[0].step << ": no file names its rank, so no process's steps can be counted\n";
    return false;
  }
  std::vector<uint64_t> steps;
  for (const Asked& a : asked) steps.push_back(static_cast<uint64_t>(a.step));
  StepStarts found;
  std::string error;
  if (!findStepStarts(ref->path, steps, step_range, found, error)) {
    err << error << '\n';
    return false;
  }
  const std::string whose = "rank " + std::to_string(ref->rank);
  const std::string use_times = "; give --from/--to as times";
  if (!found.cpu_times) err << "commtrace: " << whose << "'s ops carry no CPU times (files of NCCL 2.27)" << use_times << '\n';
  else if (found.steps == 0) err << "commtrace: " << whose << " has no NVTX step range and its op sequence does not repeat: no steps to count" << use_times << '\n';
  if (!found.cpu_times || found.steps == 0) return false;
  run.window.step_rank = ref->rank;
  run.window.step_period = found.period;
  run.window.step_range = found.step_range;
  for (size_t i = 0; i < asked.size(); ++i) {
    const auto [flag, step, to] = asked[i];
    if (steps[i] > found.steps || (!to && steps[i] == found.steps)) {
      err << "commtrace: " << flag << " step:" << step << ": " << whose << " has " << found.steps << " steps, 0 to " << found.steps - 1
          << " (--to step:" << found.steps << " is the end of the run)\n";
      return false;
    }
    const uint64_t begin = steps[i] == found.steps ? UINT64_MAX : found.begin_cpu_ns[i] == 0 ? 0 : ref->utcOfCpu(found.begin_cpu_ns[i]);
    (to ? run.window.to_step : run.window.from_step) = step;
    (to ? run.window.to_utc_ns : run.window.from_utc_ns) = begin;
  }
  return true;
}

// The window on the run's clock: relative times count from when its first process started
// recording; steps from the reference process's file. false, with the reason, for one that
// holds no time or whose steps cannot be placed.
bool resolveRunWindow(const TimeWindowSpec& spec, const std::function<bool(std::string_view)>& step_range, RunModel& run, std::ostream& err) {
  if (!spec.set()) return true;
  uint64_t start = UINT64_MAX;  // a damaged header reads as 0: no start known
  for (const ProcessInfo& p : run.processes)
    if (p.start_utc_ns != 0) start = std::min(start, p.start_utc_ns);
  if (start == UINT64_MAX) start = 0;
  run.window = resolveWindow(spec, start);
  if (!resolveSteps(spec, step_range, run, err)) return false;
  if (run.window.to_utc_ns > run.window.from_utc_ns) return true;
  err << "commtrace: --to (" << fmt::utcTime(run.window.to_utc_ns) << ") is not after --from ("
      << fmt::utcTime(run.window.from_utc_ns) << ")\n";
  return false;
}

// The report's now: SOURCE_DATE_EPOCH (whole seconds since 1970, the reproducible-builds
// convention) when set, so that a report of the same files made later says the same
// ("left open ... 3600 s before this report"); else the clock.
uint64_t reportTimeNs() {
  const char* epoch = std::getenv("SOURCE_DATE_EPOCH");
  char* end = nullptr;
  const unsigned long long seconds = epoch != nullptr ? std::strtoull(epoch, &end, 10) : 0;
  if (epoch == nullptr || end == epoch || *end != '\0' || seconds > UINT64_MAX / 1'000'000'000) return realtimeNs();
  return seconds * 1'000'000'000;
}

}  // namespace

unsigned loaderThreads() { return std::clamp(std::thread::hardware_concurrency(), 1u, kMaxLoaderThreads); }

bool loadRun(const LoadOptions& options, RunModel& run, std::ostream& err) {
  run = RunModel{};
  run.read_utc_ns = reportTimeNs();
  run.dir = describePaths(options.paths);
  std::vector<TraceFileEntry> files;
  if (!listTraceFiles(options.paths, files, err)) return false;
  if (readsAsKineto(files, err, run)) {
    if (run.processes.empty()) return false;
    if (options.window.set()) err << "commtrace: --from and --to do not apply to PyTorch profiler traces; they are reported whole\n";
    if (options.shard.set()) {
      err << "commtrace: PyTorch profiler traces are not read in shards; report them whole\n";
      return false;
    }
    if (options.stream != nullptr) replayRun(run, *options.stream);
    return true;
  }
  std::vector<AdmittedFile> admitted = admitFiles(files, run);
  if (admitted.empty()) {
    for (const std::string& why : run.skipped_files) err << why << '\n';
    err << "commtrace: none of the " << files.size() << " trace files in " << run.dir << " could be read\n";
    return false;
  }
  if (!keepOneJob(options.job, admitted, err)) return false;
  std::vector<ProcessIdentity> identities;
  std::vector<TraceFileEntry> chosen;
  uint64_t total_bytes = 0;
  for (AdmittedFile& a : admitted) {
    identities.push_back({a.info.rank, a.info.restart_count});
    total_bytes += a.file.size;
    chosen.push_back(std::move(a.file));
    run.processes.push_back(std::move(a.info));
  }
  run.timelines.resize(run.processes.size());
  if (!resolveRunWindow(options.window, options.step_range, run, err) || !resolveShardWindow(options.shard, run, err)) return false;
  ProgressLine progress(err, options.progress, static_cast<int>(chosen.size()), total_bytes);
  RunModelSink model(run, options.keep_ops);
  OpFanout sinks(options.stream != nullptr ? std::vector<JoinedOpSink*>{&model, options.stream} : std::vector<JoinedOpSink*>{&model});
  TimeWindowFilter window(run, sinks);
  OpJoiner joiner(run, std::move(identities), run.window.set() ? static_cast<JoinedOpSink&>(window) : sinks);
  ProcessReadOptions read = ProcessReadOptions::forWidth(chosen.size());
  read.window = run.window;
  read.keep_all_phases = options.keep_all_phases;
  read.step_range = options.step_range;
  read.keep_compute = options.keep_compute;
  readAndJoin(chosen, total_bytes, read, joiner, run, progress);
  progress.done();
  for (const ProcessInfo& p : run.processes)  // each file's state and time as its reader left them
    if (p.file_state == ProcessInfo::FileState::kClosed) run.last_close_utc_ns = std::max(run.last_close_utc_ns, p.modified_utc_ns);
  joiner.finish();
  return true;
}

}  // namespace commtrace::report
