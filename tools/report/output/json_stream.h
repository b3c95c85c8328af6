// JSON written as it is produced, through a buffer flushed in large blocks: for outputs of
// millions of events (the Perfetto export), where a document in memory would not fit and
// per-value stream insertions and string temporaries would dominate the time.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>

namespace commtrace::report {

class JsonStream {
 public:
  explicit JsonStream(std::ostream& out) : out_(out) { buf_.reserve(kFlushAt + 4096); }
  ~JsonStream() { flush(); }
  JsonStream(const JsonStream&) = delete;
  JsonStream& operator=(const JsonStream&) = delete;

  JsonStream& raw(std::string_view text);    // already JSON
  JsonStream& str(std::string_view text);    // a string literal, escaped
  JsonStream& num(int64_t n);
  JsonStream& num(uint64_t n);
  JsonStream& num(int n) { return num(static_cast<int64_t>(n)); }
  JsonStream& num(double v);                 // 3 decimals; null when not finite
  JsonStream& microseconds(int64_t ns);      // ns as us with exactly 3 decimals
  void flush();

 private:
  static constexpr size_t kFlushAt = 1 << 20;
  void maybeFlush() {
    if (buf_.size() >= kFlushAt) flush();
  }
  std::ostream& out_;
  std::string buf_;
};

// One JSON object's fields, opened at the first and closed by close(): {"a":1,"b":"x"}.
class JsonObject {
 public:
  explicit JsonObject(JsonStream& j) : j_(j) {}
  template <class V>
  JsonObject& field(std::string_view key, const V& value) {
    j_.raw(first_ ? "{" : ",").str(key).raw(":");
    first_ = false;
    write(value);
    return *this;
  }
  void close() { j_.raw(first_ ? "{}" : "}"); }

 private:
  void write(std::string_view v) { j_.str(v); }
  void write(const std::string& v) { j_.str(v); }
  void write(const char* v) { j_.str(v); }
  template <class N>
    requires std::is_arithmetic_v<N>
  void write(N v) { j_.num(v); }
  JsonStream& j_;
  bool first_ = true;
};

}  // namespace commtrace::report
