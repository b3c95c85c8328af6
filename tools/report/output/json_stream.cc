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

namespace {

// The length of the well-formed UTF-8 sequence text starts with (RFC 3629: no overlong
// forms, no surrogates, nothing past U+10FFFF), 0 if it does not start with one.
size_t utf8SequenceLength(std::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  const size_t n = lead >= 0xC2 && lead <= 0xDF ? 2 : lead >= 0xE0 && lead <= 0xEF ? 3 : lead >= 0xF0 && lead <= 0xF4 ? 4 : 0;
  if (n == 0 || text.size() < n) return 0;
  // The second byte's range narrows where the lead alone would allow what is not a character.
  const unsigned char low = lead == 0xE0 ? 0xA0 : lead == 0xF0 ? 0x90 : 0x80;
  const unsigned char high = lead == 0xED ? 0x9F : lead == 0xF4 ? 0x8F : 0xBF;
  if (byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < n; ++i)
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  return n;
}

}  // namespace

// Names come from the traced program (NCCL hands on whatever bytes it was given): bytes that
// are not UTF-8 become U+FFFD, as the JSON of the other outputs writes them.
JsonStream& JsonStream::str(std::string_view text) {
  auto plain = [](char c) { return c != '"' && c != '\\' && static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x80; };
  buf_ += '"';
  while (!text.empty()) {
    const size_t run = static_cast<size_t>(std::find_if_not(text.begin(), text.end(), plain) - text.begin());
    buf_.append(text.substr(0, run));  // names and keys: usually the whole text at once
    if (run == text.size()) break;
    text.remove_prefix(run);
    const char c = text[0];
    size_t used = 1;
    char esc[8];
    if (c == '"' || c == '\\') {
      buf_ += {'\\', c};
    } else if (static_cast<unsigned char>(c) < 0x20) {
      buf_.append(esc, static_cast<size_t>(std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(c))));
    } else {
      const size_t n = utf8SequenceLength(text);
      buf_.append(n != 0 ? text.substr(0, n) : std::string_view("\xEF\xBF\xBD"));  // U+FFFD
      used = std::max<size_t>(n, 1);
    }
    text.remove_prefix(used);
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
