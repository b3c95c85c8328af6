#include "tools/settings_table.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace commtrace::tools {
namespace {

std::string readmeSettings() {
  std::ifstream in(std::string(COMMTRACE_SOURCE_DIR) + "/README.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  const std::string begin = "<!-- commtrace settings: begin -->\n", end = "<!-- commtrace settings: end -->";
  const size_t from = s.find(begin), to = s.find(end);
  if (from == std::string::npos || to == std::string::npos || to < from) return "(no settings block in README.md)";
  return s.substr(from + begin.size(), to - from - begin.size());
}

TEST(SettingsTableTest, TheReadmeListsEverySettingAsDeclared) {
  EXPECT_EQ(readmeSettings(), settingsMarkdown()) << "paste `commtrace settings` into README.md";
}

TEST(SettingsTableTest, EveryRowHasItsDefaultAndRange) {
  const std::string table = settingsMarkdown();
  EXPECT_NE(table.find("| `COMMTRACE_FLUSH_MS` | 200 | 10–60000 |"), std::string::npos) << table;
  EXPECT_NE(table.find("| `COMMTRACE_PROXY_EVENTS` | 0 | 1/0"), std::string::npos) << table;
  EXPECT_NE(table.find("| `COMMTRACE_DIR` | `commtrace-run/<job id>` |"), std::string::npos) << table;
}

}  // namespace
}  // namespace commtrace::tools
