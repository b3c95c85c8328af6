// The README and docs/ as a reader of the repository meets them: every relative link leads to
// a file in the repository, and nothing points outside it (the project's private notes) or
// at internal issue numbers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace commtrace {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> documents() {
  const fs::path root = COMMTRACE_SOURCE_DIR;
  std::vector<fs::path> out = {root / "README.md"};
  for (const fs::directory_entry& e : fs::directory_iterator(root / "docs"))
    if (e.path().extension() == ".md") out.push_back(e.path());
  return out;
}

std::string text(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Docs, RelativeLinksLeadToFilesInTheRepository) {
  const std::regex link(R"(\]\(([^)#:]+)(#[^)]*)?\))");
  size_t links = 0;
  for (const fs::path& doc : documents()) {
    const std::string body = text(doc);
    for (std::sregex_iterator it(body.begin(), body.end(), link), end; it != end; ++it) {
      ++links;
      const fs::path target = (doc.parent_path() / (*it)[1].str()).lexically_normal();
      EXPECT_TRUE(fs::exists(target)) << doc.filename() << " links to " << (*it)[1] << ", which is not there";
      EXPECT_EQ(target.string().rfind(fs::path(COMMTRACE_SOURCE_DIR).lexically_normal().string(), 0), 0u)
          << doc.filename() << " links outside the repository: " << (*it)[1];
    }
  }
  EXPECT_GT(links, 10u);
}

TEST(Docs, NoPointersOutsideTheRepositoryOrToIssueNumbers) {
  const std::regex outside(R"(\.\./shared|shared/reference|reference/[a-z-]+\.md|DESIGN\.md|STYLE\.md|[Ii]ssue #?\d|\(#\d+)");
  for (const fs::path& doc : documents()) {
    const std::string body = text(doc);
    std::smatch m;
    EXPECT_FALSE(std::regex_search(body, m, outside)) << doc.filename() << ": " << m.str();
  }
}

// The line a preloaded job prints first, as the README quotes it: the library prints exactly
// this (PreloadProcess tests hold it to it); the README quoted an older one.
TEST(Docs, TheReadmeQuotesThePreloadLineTheLibraryPrints) {
  const std::string readme = text(fs::path(COMMTRACE_SOURCE_DIR) / "README.md");
  const std::string flat = std::regex_replace(readme, std::regex("\\s+"), " ");
  EXPECT_NE(flat.find("`commtrace: set NCCL_PROFILER_PLUGIN and NVTX_INJECTION64_PATH to /opt/commtrace/lib/libcommtrace.so`"),
            std::string::npos);
}

}  // namespace
}  // namespace commtrace
