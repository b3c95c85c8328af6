#pragma once

#include <ostream>
#include <string>

namespace commtrace::tools {

enum class DumpFormat { kText, kJson };

// Prints every record of a trace file to out, damage reports and a summary to err.
// Returns the process exit code: 0 if the file was read (damage included), 1 if it could
// not be read at all.
int dump(const std::string& path, DumpFormat format, std::ostream& out, std::ostream& err);

}  // namespace commtrace::tools
