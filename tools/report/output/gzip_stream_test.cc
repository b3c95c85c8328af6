#include "tools/report/output/gzip_stream.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace commtrace::report {
namespace {

std::string gunzip(const std::string& in) {
  z_stream zs{};
  EXPECT_EQ(inflateInit2(&zs, 15 + 16), Z_OK);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  std::string out;
  char buffer[1 << 16];
  int status = Z_OK;
  while (status == Z_OK) {
    zs.next_out = reinterpret_cast<Bytef*>(buffer);
    zs.avail_out = sizeof buffer;
    status = inflate(&zs, Z_NO_FLUSH);
    out.append(buffer, sizeof buffer - zs.avail_out);
  }
  EXPECT_EQ(status, Z_STREAM_END) << "a complete gzip member, trailer included";
  inflateEnd(&zs);
  return out;
}

TEST(GzipStream, WhatGoesInComesOutOfGunzip) {
  std::string text;
  for (int i = 0; i < 200'000; ++i) text += "slice " + std::to_string(i * 7919 % 1000) + (i % 3 ? "," : "\n");
  std::ostringstream file;
  {
    GzipOstream gz(file);
    gz << text.substr(0, 1000);
    gz.write(text.data() + 1000, static_cast<std::streamsize>(text.size() - 1000));
    ASSERT_TRUE(gz.finish());
  }
  const std::string compressed = file.str();
  EXPECT_EQ(compressed.substr(0, 2), "\x1f\x8b");
  EXPECT_LT(compressed.size() * 3, text.size());
  EXPECT_EQ(gunzip(compressed), text);
}

TEST(GzipStream, NothingWrittenIsAnEmptyGzipFile) {
  std::ostringstream file;
  {
    GzipOstream gz(file);
    ASSERT_TRUE(gz.finish());
  }
  EXPECT_EQ(gunzip(file.str()), "");
}

}  // namespace
}  // namespace commtrace::report
