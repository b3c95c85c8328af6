// The exposition format's shared pieces: label values escaped as Prometheus reads them, and a
// file replaced whole or not at all.
#include "core/prometheus_exposition.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include "tests/support/temp_dir.h"

namespace commtrace::prometheus {
namespace {

TEST(PrometheusExposition, LabelValuesEscapeBackslashQuoteAndNewline) {
  EXPECT_EQ(quoted("dp.0"), "\"dp.0\"");
  EXPECT_EQ(quoted("a\\b\"c\nd"), "\"a\\\\b\\\"c\\nd\"");
  EXPECT_EQ(familyLines("m_total", "counter", "what it counts"), "# HELP m_total what it counts\n# TYPE m_total counter\n");
}

TEST(PrometheusExposition, AFileIsReplacedWholeOrLeftAsItWas) {
  testutil::TempDir dir;
  const std::string path = dir.path() + "/x.prom";
  ASSERT_TRUE(replaceFile(path, "first\n"));
  ASSERT_TRUE(replaceFile(path, "second\n"));
  std::ifstream in(path);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "second\n");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  errno = 0;
  EXPECT_FALSE(replaceFile(dir.path() + "/no/such/dir/x.prom", "text"));
  EXPECT_EQ(errno, ENOENT);
}

}  // namespace
}  // namespace commtrace::prometheus
