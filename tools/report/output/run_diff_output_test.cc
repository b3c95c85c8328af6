// `commtrace diff --format json` as SCHEMA.md documents it: every field the writer puts out
// (as a path: `ops[].a.count`) is in the table under "<!-- paths: commtrace.diff.v1 -->",
// and every path there is written.
#include "tools/report/output/run_diff_output.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

namespace commtrace::report {
namespace {

// Every leaf's path; an array's elements are `[]`.
void pathsOf(const nlohmann::json& j, const std::string& at, std::set<std::string>& out) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) pathsOf(value, at.empty() ? key : at + "." + key, out);
  } else if (j.is_array() && !j.empty() && (j.front().is_object() || j.front().is_array())) {
    for (const nlohmann::json& e : j) pathsOf(e, at + "[]", out);
  } else {
    out.insert(at);
  }
}

std::set<std::string> documentedPaths() {
  std::ifstream in(std::string(COMMTRACE_SOURCE_DIR) + "/tools/report/SCHEMA.md");
  std::set<std::string> out;
  bool in_table = false;
  for (std::string line; std::getline(in, line);) {
    if (line == "<!-- paths: commtrace.diff.v1 -->") in_table = true;
    else if (in_table && !line.starts_with("|")) in_table = line.empty() && out.empty();
    else if (in_table && line.starts_with("| `")) out.insert(line.substr(3, line.find('`', 3) - 3));
  }
  return out;
}

TEST(DiffJson, EveryFieldWrittenIsDocumentedAndEveryDocumentedFieldWritten) {
  RunDiff d;
  d.ops.push_back({"dp", "AllReduce", "1-4 MiB", {1, 2, 3, 4, "RING/SIMPLE"}, {1, 2, 3, 4, "RING/LL"}, ""});
  d.ranks.push_back({3, 10, 11, 1, 2, true, false});
  d.paths.push_back({"train_step # / forward", 10, 12, 4, PathDiffRow::kUnknown, ""});
  d.findings_new.push_back({"straggler", "rank 6", "Straggler: rank 6 ..."});
  d.findings_gone = d.findings_kept = d.findings_new;
  d.gains.push_back({"rank 6", "Straggler: rank 6 ...", 100, 110});
  d.warnings.push_back("different rank counts");
  std::ostringstream out;
  writeDiffJson(d, "a", "b", out);
  std::set<std::string> written;
  pathsOf(nlohmann::json::parse(out.str()), "", written);
  const std::set<std::string> documented = documentedPaths();
  ASSERT_FALSE(documented.empty()) << "SCHEMA.md has no <!-- paths: commtrace.diff.v1 --> table";
  EXPECT_EQ(written, documented);
}

}  // namespace
}  // namespace commtrace::report
