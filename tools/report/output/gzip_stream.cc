#include "tools/report/output/gzip_stream.h"

namespace commtrace::report {
namespace {

constexpr size_t kChunk = 1 << 18;
constexpr int kGzipWindowBits = 15 + 16;  // 2^15 window, with a gzip header and trailer

}  // namespace

GzipStreambuf::GzipStreambuf(std::ostream& out, int level) : out_(out), in_(kChunk), compressed_(kChunk) {
  ok_ = deflateInit2(&zs_, level, Z_DEFLATED, kGzipWindowBits, 8, Z_DEFAULT_STRATEGY) == Z_OK;
  setp(in_.data(), in_.data() + in_.size());
}

GzipStreambuf::~GzipStreambuf() {
  finish();
  deflateEnd(&zs_);
}

// Compresses what sits in the put area, then empties it.
bool GzipStreambuf::deflateBuffered(int flush) {
  zs_.next_in = reinterpret_cast<Bytef*>(pbase());
  zs_.avail_in = static_cast<uInt>(pptr() - pbase());
  int status = Z_OK;
  do {
    zs_.next_out = reinterpret_cast<Bytef*>(compressed_.data());
    zs_.avail_out = static_cast<uInt>(compressed_.size());
    status = deflate(&zs_, flush);
    if (status == Z_STREAM_ERROR) return ok_ = false;
    out_.write(compressed_.data(), static_cast<std::streamsize>(compressed_.size() - zs_.avail_out));
  } while (zs_.avail_out == 0 || (flush == Z_FINISH && status != Z_STREAM_END));
  setp(in_.data(), in_.data() + in_.size());
  return ok_ = ok_ && static_cast<bool>(out_);
}

GzipStreambuf::int_type GzipStreambuf::overflow(int_type c) {
  if (!ok_ || finished_ || !deflateBuffered(Z_NO_FLUSH)) return traits_type::eof();
  if (!traits_type::eq_int_type(c, traits_type::eof())) {
    *pptr() = traits_type::to_char_type(c);
    pbump(1);
  }
  return traits_type::not_eof(c);
}

// Only what the caller wrote reaches zlib; compressed blocks go out when zlib makes them
// (a sync flush after every ostream::flush would cost ratio for nothing).
int GzipStreambuf::sync() { return ok_ ? 0 : -1; }

bool GzipStreambuf::finish() {
  if (finished_) return ok_;
  finished_ = true;
  if (ok_) deflateBuffered(Z_FINISH);
  out_.flush();
  return ok_ && static_cast<bool>(out_);
}

}  // namespace commtrace::report
