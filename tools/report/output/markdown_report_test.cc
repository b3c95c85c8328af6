// The Markdown report: the text report's sections as headings and pipe tables a renderer
// (GitHub's) shows as such, cut as the terminal cuts them, with every text from the files
// escaped so that no name breaks a table or becomes markup.
#include "tools/report/output/markdown_report.h"

#include <gtest/gtest.h>

#include <sstream>

#include "tests/support/run_program.h"
#include "tests/support/sample_report.h"
#include "tests/support/text_page_titles.h"

namespace commtrace::report {
namespace {

std::string markdown(const Report& r) {
  std::ostringstream out;
  writeMarkdown(r, out);
  return out.str();
}

// The number of unescaped pipes in a line: a table row of n cells has n + 1.
size_t cellBorders(const std::string& line) {
  size_t pipes = 0;
  for (size_t i = 0; i < line.size(); ++i)
    if (line[i] == '|' && (i == 0 || line[i - 1] != '\\')) ++pipes;
  return pipes;
}

TEST(MarkdownReport, SectionsAreHeadingsAndTablesAreWholePipeTables) {
  const std::string page = markdown(testutil::sampleReport());
  const std::vector<std::string> lines = testutil::linesOf(page);
  EXPECT_EQ(lines.front(), "# commtrace report");
  EXPECT_NE(page.find("\n## Findings\n\n1. Rank 2 (node1) is the straggler"), std::string::npos);
  EXPECT_NE(page.find("\n## Communicators (2)\n\n| id | name | size |"), std::string::npos);
  // Every row of a table has the header's number of cells; numbers are right-aligned.
  size_t tables = 0;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    if (!lines[i].starts_with("| ") || !lines[i + 1].starts_with("| ---")) continue;
    ++tables;
    const size_t borders = cellBorders(lines[i]);
    EXPECT_EQ(cellBorders(lines[i + 1]), borders) << lines[i];
    for (size_t r = i + 2; r < lines.size() && lines[r].starts_with("|"); ++r) EXPECT_EQ(cellBorders(lines[r]), borders) << lines[r];
  }
  EXPECT_GE(tables, 8u);
  EXPECT_NE(page.find("| id | name | size | ranks | hosts | instances |\n| --- | --- | ---: |"), std::string::npos);
  EXPECT_EQ(page.find("\\."), std::string::npos) << "a number in a cell (11.98) starts no list: nothing to escape";
}

// kTrickyName: a comma, quotes, a line break and HTML. In a cell it stays one line of text.
TEST(MarkdownReport, NamesFromTheFilesAreEscaped) {
  Report r = testutil::sampleReport();
  r.communicators[0].name = "a|b *c* _d_ [e](f) `g`";
  const std::string page = markdown(r);
  EXPECT_NE(page.find("a\\|b \\*c\\* \\_d\\_ \\[e\\](f) \\`g\\`"), std::string::npos);
  EXPECT_NE(page.find("tp,\"0\" \\<b\\>\\&x\\</b\\>"), std::string::npos) << "the line break is a space, the markup text";
  EXPECT_EQ(page.find("<b>"), std::string::npos);
}

// A note that starts like a list item or a heading stays a paragraph.
TEST(MarkdownReport, AParagraphThatLooksLikeAListStaysText) {
  Report r = testutil::sampleReport();
  r.findings = {"- not a list", "# not a heading"};
  r.run.problems = {"3. not numbered"};
  const std::string page = markdown(r);
  EXPECT_NE(page.find("1. \\- not a list\n2. \\# not a heading\n"), std::string::npos);
  EXPECT_NE(page.find("- 3\\. not numbered\n"), std::string::npos);
}

// Cut as on the terminal: the first 10 rows of a ranking, then how many more and where.
TEST(MarkdownReport, LongTablesAreCutWithAPointer) {
  Report r = testutil::sampleReport();
  r.stragglers.ranks.resize(25, r.stragglers.ranks.front());
  const std::string page = markdown(r);
  const size_t at = page.find("## Stragglers");
  ASSERT_NE(at, std::string::npos);
  EXPECT_NE(page.find("(15 more rows: --format json or csv for all)", at), std::string::npos);
}

// The same sections as the text report, in its order; charts are left to the HTML page.
TEST(MarkdownReport, HasTheTextReportsSectionsInItsOrder) {
  const Report r = testutil::sampleReport();
  std::vector<std::string> md_titles;
  for (const std::string& line : testutil::linesOf(markdown(r)))
    if (line.starts_with("## ") || line.starts_with("### ")) {
      const std::string title = line.substr(line.find(' ') + 1);
      md_titles.push_back(title.substr(0, title.find(" (")));  // as the text's are cut: "Communicators (2)" too
    }
  EXPECT_EQ(md_titles, testutil::textPageTitles(r));
  EXPECT_EQ(markdown(r).find("<svg"), std::string::npos);
}

}  // namespace
}  // namespace commtrace::report
