// Where a process's trace file goes. COMMTRACE_DIR, when set, is used as given; otherwise
// each job gets a directory of its own under commtrace-run/, named by its job id, so that
// jobs started one after another in the same place never share a directory (a report of a
// shared one would merge them into one run).
#pragma once

#include <string>
#include <string_view>

#include "core/process_identity.h"
#include "core/settings.h"

namespace commtrace {

inline constexpr std::string_view kDefaultRunRoot = "commtrace-run";

// A name (a job id, a host name) as one safe path component: letters, digits and ._-+@
// kept, anything else (a '/', spaces, control bytes) and a leading '.' become '_'; at most
// 200 bytes; `if_empty` for an empty name.
std::string pathComponentOf(std::string_view name, std::string_view if_empty);
inline std::string jobDirectoryName(std::string_view job_id) { return pathComponentOf(job_id, "unnamed-job"); }

// The directory this process writes into. Cold path.
std::string runDirectory(const Settings& settings, const ProcessIdentity& identity);

}  // namespace commtrace
