#include "sink/collect_protocol.h"

#include <cstring>

namespace commtrace::collect {
namespace {

constexpr std::string_view kKeyContext = "commtrace-collect-v1";

std::span<const uint8_t> bytesOf(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

void putLe(uint8_t* p, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t getLe(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

LinkKey keyOf(std::span<const uint8_t> secret) {
  Sha256 h;
  h.update(bytesOf(kKeyContext));
  h.update(secret);
  return h.finish();
}

}  // namespace

LinkKey keyFromToken(std::string_view token) { return keyOf(bytesOf(token)); }
LinkKey keyFromUniqueId(std::span<const uint8_t> unique_id) { return keyOf(unique_id); }

void keyToHex(const LinkKey& key, char (&hex)[kKeyHexDigits]) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (size_t i = 0; i < key.size(); ++i) {
    hex[2 * i] = kDigits[key[i] >> 4];
    hex[2 * i + 1] = kDigits[key[i] & 15];
  }
}

bool keyFromHex(std::string_view hex, LinkKey& key) {
  const auto nibble = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; };
  if (hex.size() != kKeyHexDigits) return false;
  LinkKey out;
  for (size_t i = 0; i < out.size(); ++i) {
    const int high = nibble(hex[2 * i]), low = nibble(hex[2 * i + 1]);
    if (high < 0 || low < 0) return false;
    out[i] = static_cast<uint8_t>(high << 4 | low);
  }
  key = out;
  return true;
}

void appendGreeting(wire::Bytes& out, const Challenge& challenge) {
  out.insert(out.end(), kGreeting, kGreeting + sizeof kGreeting);
  out.insert(out.end(), challenge.begin(), challenge.end());
}

bool parseGreeting(std::span<const uint8_t> bytes, Challenge& challenge) {
  if (bytes.size() < kGreetingBytes || std::memcmp(bytes.data(), kGreeting, sizeof kGreeting) != 0) return false;
  std::memcpy(challenge.data(), bytes.data() + sizeof kGreeting, challenge.size());
  return true;
}

void appendMessage(wire::Bytes& out, const LinkKey& key, const Challenge& challenge, uint64_t number,
                   std::span<const uint8_t> payload) {
  uint8_t header[kHeaderBytes];
  std::memcpy(header, kMagic, 4);
  putLe(header + 4, payload.size(), 4);
  putLe(header + 8, number, 8);
  const Sha256Digest mac = hmacSha256(key, {challenge, header, payload});
  out.insert(out.end(), header, header + kHeaderBytes);
  out.insert(out.end(), payload.begin(), payload.end());
  out.insert(out.end(), mac.begin(), mac.end());
}

bool MessageReader::next(std::span<const uint8_t>& payload) {
  if (!fault_.empty()) return false;
  if (consumed_ > 0) {  // what was handed out last time is no longer needed
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<ptrdiff_t>(consumed_));
    consumed_ = 0;
  }
  if (buffer_.size() < kHeaderBytes) return false;
  const uint8_t* h = buffer_.data();
  if (std::memcmp(h, kMagic, 4) != 0) {
    fault_ = "not a commtrace digest";
    return false;
  }
  const uint64_t length = getLe(h + 4, 4);
  if (length > kMaxPayload) {
    fault_ = "message of " + std::to_string(length) + " bytes, above the limit";
    return false;
  }
  if (getLe(h + 8, 8) != number_) {
    fault_ = "message out of order";
    return false;
  }
  const size_t whole = kHeaderBytes + length + kMacBytes;
  if (buffer_.size() < whole) return false;
  const std::span<const uint8_t> body(h + kHeaderBytes, length);
  Sha256Digest mac;
  std::memcpy(mac.data(), h + kHeaderBytes + length, kMacBytes);
  if (!digestsEqual(mac, key_.mac({challenge_, std::span<const uint8_t>(h, kHeaderBytes), body}))) {
    fault_ = "message not signed with this job's key";
    return false;
  }
  ++number_;
  consumed_ = whole;
  payload = body;
  return true;
}

}  // namespace commtrace::collect
