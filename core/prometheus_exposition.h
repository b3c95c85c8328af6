// Prometheus' text exposition format (0.0.4), the pieces both writers of it share: the
// collector's job-wide metrics (tools/report/output/prometheus_text.h) and each process's own
// textfile (sink/process_metrics.h).
#pragma once

#include <string>
#include <string_view>

namespace commtrace::prometheus {

// A label value quoted: backslash, double quote and newline escaped.
std::string quoted(std::string_view value);

// The "# HELP" and "# TYPE" lines of a metric family.
std::string familyLines(std::string_view name, std::string_view type, std::string_view help);

// Replaces the file at `path` with `text` through path.tmp renamed over it, so that
// node-exporter never reads half a file. false with errno set when it cannot.
bool replaceFile(const std::string& path, std::string_view text);

}  // namespace commtrace::prometheus
