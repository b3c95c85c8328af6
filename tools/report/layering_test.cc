// The report's layers, read from the sources: the loader knows nothing of the analyses,
// the report's rows or the output, and the analyses hold no prose (the words that say
// findings, evidence and advice to people sit above them, in tools/report/*_words.*). A
// file that reaches the wrong way fails here, by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

const fs::path kReport = fs::path(COMMTRACE_SOURCE_DIR) / "tools" / "report";

// The project headers a file includes, as written ("tools/report/...").
std::vector<std::string> includesOf(const fs::path& file) {
  static const std::regex include(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::vector<std::string> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (std::smatch m; std::regex_search(line, m, include)) out.push_back(m[1]);
  return out;
}

// Every source and header of a folder but its tests.
std::vector<fs::path> sourcesIn(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const bool source = name.ends_with(".cc") || name.ends_with(".h");
    if (source && !name.ends_with("_test.cc")) out.push_back(entry.path());
  }
  return out;
}

bool isProse(const std::string& include) { return include.starts_with("tools/report/") && include.ends_with("_words.h"); }

// What `dir`'s files include that `forbidden` says they must not, as "file: include" lines.
std::vector<std::string> reachesOf(const fs::path& dir, bool (*forbidden)(const std::string&)) {
  std::vector<std::string> out;
  for (const fs::path& file : sourcesIn(dir))
    for (const std::string& include : includesOf(file))
      if (forbidden(include)) out.push_back(file.filename().string() + ": " + include);
  return out;
}

// What the loader produces (the RunModel, the run summary, the clock fits) is declared in
// load/; the rest of the report reads it and never the other way round. The one header
// above it the loader may use is how numbers are spelt (format.h), for its own messages.
TEST(ReportLayers, TheLoaderIncludesNothingOfTheReportAboveIt) {
  ASSERT_GT(sourcesIn(kReport / "load").size(), 10u) << "the loader's sources are where this test looks: " << kReport;
  const auto above = [](const std::string& include) {
    return include.starts_with("tools/report/") && !include.starts_with("tools/report/load/") && include != "tools/report/format.h";
  };
  EXPECT_EQ(reachesOf(kReport / "load", above), std::vector<std::string>{});
}

TEST(ReportLayers, AnalysesHoldNoProseAndDoNotReachTheOutput) {
  ASSERT_GT(sourcesIn(kReport / "analyses").size(), 10u);
  const auto above = [](const std::string& include) { return include.starts_with("tools/report/output/") || isProse(include); };
  EXPECT_EQ(reachesOf(kReport / "analyses", above), std::vector<std::string>{});
}

// The words read the data the loader produces (names of communicators and ranks in the
// RunModel), never its machinery (readers, the joiner, the clock fit).
bool isLoaderData(const std::string& include) {
  return include == "tools/report/load/run_model.h" || include == "tools/report/load/run_summary_rows.h" ||
         include == "tools/report/load/clock_summary.h";
}

TEST(ReportLayers, ProseDoesNotReachIntoTheLoader) {
  std::vector<std::string> out;
  size_t words = 0;
  for (const fs::path& file : sourcesIn(kReport)) {
    if (file.filename().string().find("_words.") == std::string::npos) continue;
    ++words;
    for (const std::string& include : includesOf(file))
      if (include.starts_with("tools/report/load/") && !isLoaderData(include)) out.push_back(file.filename().string() + ": " + include);
  }
  ASSERT_GE(words, 6u) << "evidence, finding and advice words, each a header and a source";
  EXPECT_EQ(out, std::vector<std::string>{});
}

// Each analysis declares its rows beside it (analyses/*_rows.h): plain data that includes
// nothing but other rows and the loader's data, so a writer or another analysis reads one
// analysis' rows without its machinery, and report.h gathers them.
TEST(ReportLayers, AnalysesRowsArePlainData) {
  size_t rows = 0;
  std::vector<std::string> out;
  for (const fs::path& file : sourcesIn(kReport / "analyses")) {
    if (!file.filename().string().ends_with("_rows.h")) continue;
    ++rows;
    for (const std::string& include : includesOf(file))
      if (!include.ends_with("_rows.h") && !isLoaderData(include)) out.push_back(file.filename().string() + ": " + include);
  }
  EXPECT_GE(rows, 12u);
  EXPECT_EQ(out, std::vector<std::string>{});
}

}  // namespace
