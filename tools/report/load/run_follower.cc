#include "tools/report/load/run_follower.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <queue>

namespace commtrace::report {
namespace {

// The earlier ops each process's gaps are measured against, beside a chunk's own: a live
// digest is a second of ops, and what the tracker keeps is kept for every process of the job
// (64 spans: 1.5 KB each, against 12 KB at the report's 512).
constexpr size_t kLiveGapWindow = 64;

}  // namespace

struct RunFollower::File {
  std::string path;
  std::unique_ptr<ProcessReader> reader;
  uint64_t position_ns = 0;  // the latest op read, as UTC; 0 before any
  bool closed = false;
  std::chrono::steady_clock::time_point last_read = std::chrono::steady_clock::now();  // admitted, or a chunk read
  // Not closed, and nothing read from it since `since`.
  bool silentSince(std::chrono::steady_clock::time_point since) const { return !closed && last_read <= since; }
};

RunFollower::RunFollower(std::string dir, RunModel& run, JoinedOpSink& sink, size_t max_open)
    : dir_(std::move(dir)), run_(run), names_(run.names), options_{.keep_all_phases = false, .keep_compute = false, .gpu_gaps = true, .gap_window = kLiveGapWindow, .match_kernel_clocks = false}, joiner_(run, {}, sink), descriptors_(max_open) {
  run_.dir = dir_;
}

RunFollower::~RunFollower() = default;

bool RunFollower::poll(std::ostream& err) {
  if (!dir_.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir_, ec)) {
      err << "commtrace: " << dir_ << ": not a directory (or cannot be read)\n";
      return false;
    }
    admitNewFiles();
  }
  readInStep();
  return true;
}

// A chunk at a time from the file furthest behind, as the report's loader reads: what is held
// is the instances the files' skew keeps open, however much a watch started late finds written.
void RunFollower::readInStep() {
  using Behind = std::pair<uint64_t, size_t>;  // (position, file)
  std::priority_queue<Behind, std::vector<Behind>, std::greater<>> behind;
  for (size_t i = 0; i < files_.size(); ++i) {
    files_[i]->reader->refresh();
    behind.push({files_[i]->position_ns, i});
  }
  RecordBatch batch;
  while (!behind.empty()) {
    File& file = *files_[behind.top().second];
    const size_t index = behind.top().second;
    behind.pop();
    if (!file.reader->next(batch, scratch_)) {
      file.closed = file.reader->closed();
      continue;
    }
    file.position_ns = std::max(file.position_ns, batch.position_ns);
    file.last_read = std::chrono::steady_clock::now();
    if (observer_) observer_(batch);
    joiner_.add(batch);
    behind.push({file.position_ns, index});
  }
}

// The directories' modification times, as last listed: a new file changes its directory's.
// The kernel stamps them from a coarse clock, so a time as recent as the listing proves
// nothing (a file made in the same tick leaves it as it was): such a directory is listed again.
bool RunFollower::directoriesChanged() const {
  if (directories_.empty()) return true;
  const auto settled = std::filesystem::file_time_type::clock::now() - std::chrono::seconds(2);
  for (const auto& [path, time] : directories_) {
    std::error_code ec;
    if (time > settled || std::filesystem::last_write_time(path, ec) != time || ec) return true;
  }
  return false;
}

// A file whose header cannot be read yet (just created) is tried again at the next poll; the
// directories are listed again only when one changed (or such a file waits).
void RunFollower::admitNewFiles() {
  if (!directoriesChanged() && !retry_) return;
  std::error_code ec;
  std::vector<std::string> found;
  directories_.clear();
  directories_.emplace_back(dir_, std::filesystem::last_write_time(dir_, ec));
  for (std::filesystem::recursive_directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code file_ec;
    if (it->is_directory(file_ec)) directories_.emplace_back(it->path().string(), std::filesystem::last_write_time(it->path(), file_ec));
    else if (it->path().extension() == ".ctrace" && it->is_regular_file(file_ec)) found.push_back(it->path().string());
  }
  retry_ = false;
  std::sort(found.begin(), found.end());
  for (const std::string& path : found) {
    if (std::binary_search(seen_.begin(), seen_.end(), path)) continue;
    auto reader = std::make_unique<ProcessReader>(names_, static_cast<int>(run_.processes.size()), options_);
    std::string error;
    if (!reader->open(path, error, &descriptors_)) {
      retry_ = true;
      continue;
    }
    follow(path, std::move(reader));
    seen_.insert(std::upper_bound(seen_.begin(), seen_.end(), path), path);
  }
}

bool RunFollower::admit(const std::string& name, std::shared_ptr<ByteSource> source, std::ostream& err) {
  auto reader = std::make_unique<ProcessReader>(names_, static_cast<int>(run_.processes.size()), options_);
  std::string error;
  if (!reader->open(name, std::move(source), error)) {
    err << error << "\n";
    return false;
  }
  follow(name, std::move(reader));
  return true;
}

void RunFollower::follow(const std::string& path, std::unique_ptr<ProcessReader> reader) {
  ProcessInfo& info = run_.processes.emplace_back();
  describeProcess(reader->header(), path, info);
  run_.timelines.emplace_back();
  joiner_.addProcess({info.rank, info.restart_count});
  files_.push_back(std::make_unique<File>(File{path, std::move(reader)}));
}

uint64_t RunFollower::watermark() const {
  const auto silent_since = std::chrono::steady_clock::now() - silent_after_;
  uint64_t open_min = UINT64_MAX, latest = 0;
  for (const std::unique_ptr<File>& f : files_) {
    latest = std::max(latest, f->position_ns);
    if (!f->closed && f->position_ns != 0 && !f->silentSince(silent_since)) open_min = std::min(open_min, f->position_ns);
  }
  return open_min != UINT64_MAX ? open_min : latest;
}

size_t RunFollower::silentFiles(std::chrono::steady_clock::duration quiet) const {
  const auto since = std::chrono::steady_clock::now() - quiet;
  return static_cast<size_t>(std::count_if(files_.begin(), files_.end(), [&](const std::unique_ptr<File>& f) { return f->silentSince(since); }));
}

size_t RunFollower::closedFiles() const {
  return static_cast<size_t>(std::count_if(files_.begin(), files_.end(), [](const std::unique_ptr<File>& f) { return f->closed; }));
}

void RunFollower::finish() { joiner_.finish(); }

}  // namespace commtrace::report
