#include "tools/report/output/json_stream.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace commtrace::report {

JsonStream& JsonStream::raw(std::string_view text) {
  buf_.append(text);
  maybeFlush();
  return *this;
}

JsonStream& JsonStream::str(std::string_view text) {
  auto plain = [](char c) { return c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20; };
  buf_ += '"';
  while (!text.empty()) {
    const size_t run = static_cast<size_t>(std::find_if_not(text.begin(), text.end(), plain) - text.begin());
    buf_.append(text.substr(0, run));  // names and keys: usually the whole text at once
    if (run == text.size()) break;
    const char c = text[run];
    char esc[8];
    if (c == '"' || c == '\\') buf_ += {'\\', c};
    else buf_.append(esc, static_cast<size_t>(std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(c))));
    text.remove_prefix(run + 1);
  }
  buf_ += '"';
  maybeFlush();
  return *this;
}

JsonStream& JsonStream::num(int64_t n) {
  char digits[24];
  buf_.append(digits, std::to_chars(digits, digits + sizeof digits, n).ptr);
  return *this;
}

JsonStream& JsonStream::num(uint64_t n) {
  char digits[24];
  buf_.append(digits, std::to_chars(digits, digits + sizeof digits, n).ptr);
  return *this;
}

JsonStream& JsonStream::num(double v) {
  if (!std::isfinite(v)) return raw("null");
  char digits[64];
  buf_.append(digits, std::to_chars(digits, digits + sizeof digits, v, std::chars_format::fixed, 3).ptr);
  return *this;
}

JsonStream& JsonStream::microseconds(int64_t ns) {
  const uint64_t magnitude = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  if (ns < 0) buf_ += '-';
  num(magnitude / 1000);
  const auto frac = static_cast<unsigned>(magnitude % 1000);
  const char decimals[] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10), static_cast<char>('0' + frac % 10)};
  buf_.append(decimals, sizeof decimals);
  return *this;
}

void JsonStream::flush() {
  out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  buf_.clear();
}

}  // namespace commtrace::report
