#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace commtrace::tools {

enum class DumpFormat { kText, kJson };

// Prints every record of the trace files named (a directory: every *.ctrace below it, in
// path order) to out, damage reports and a summary per file to err. Each file starts with
// its header: a "# path: host, pid, rank, job ..." line, or a JSON line of kind
// "FileHeader". Returns the process exit code: 0 if every file was read (damage included),
// 1 if one could not be read at all or a path names nothing.
int dump(const std::vector<std::string>& paths, DumpFormat format, std::ostream& out, std::ostream& err);

}  // namespace commtrace::tools
