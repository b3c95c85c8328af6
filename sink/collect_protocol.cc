#include "sink/collect_protocol.h"

#include <cstring>

namespace commtrace::collect {
namespace {

constexpr std::string_view kKeyContext = "commtrace-collect-v1";
constexpr uint8_t kSealContext[4] = {'s', 'e', 'a', 'l'};

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
  const HmacKey hmac(key);
  const Sha256Digest seal = hmac.mac({kSealContext, challenge, header});
  const size_t start = out.size();
  out.insert(out.end(), header, header + kHeaderBytes);
  out.insert(out.end(), seal.begin(), seal.end());
  out.insert(out.end(), payload.begin(), payload.end());
  const Sha256Digest mac = hmac.mac({challenge, std::span<const uint8_t>(out).subspan(start)});
  out.insert(out.end(), mac.begin(), mac.end());
}

void appendRefusal(wire::Bytes& out, std::string_view reason) {
  reason = reason.substr(0, kMaxRefusalText);
  out.insert(out.end(), kRefusalMagic, kRefusalMagic + 4);
  out.push_back(static_cast<uint8_t>(reason.size()));
  out.push_back(static_cast<uint8_t>(reason.size() >> 8));
  out.insert(out.end(), reason.begin(), reason.end());
}

bool parseRefusal(std::span<const uint8_t> bytes, std::string& reason) {
  if (bytes.size() < 6 || std::memcmp(bytes.data(), kRefusalMagic, 4) != 0) return false;
  const size_t length = getLe(bytes.data() + 4, 2);
  if (length > kMaxRefusalText || bytes.size() < 6 + length) return false;
  reason.assign(reinterpret_cast<const char*>(bytes.data()) + 6, length);
  for (char& c : reason)  // the words go into a log line: nothing that could forge another
    if (c < 0x20 || c > 0x7e) c = '?';
  return true;
}

size_t MessageReader::acceptable() const {
  if (proven_) return SIZE_MAX;
  if (!fault_.empty()) return 0;
  const size_t held = buffered();
  return held < kSealedHeaderBytes ? kSealedHeaderBytes - held : 0;
}

bool MessageReader::macMatches(const uint8_t* mac, std::initializer_list<std::span<const uint8_t>> parts) {
  Sha256Digest sent;
  std::memcpy(sent.data(), mac, kMacBytes);
  if (digestsEqual(sent, key_.mac(parts))) return true;
  fault_ = "message not signed with this job's key";
  return false;
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
    fault_ = "message size above the limit";
    return false;
  }
  if (getLe(h + 8, 8) != number_) {
    fault_ = "message out of order";
    return false;
  }
  if (!sealed_) {
    if (buffer_.size() < kSealedHeaderBytes) return false;
    if (!macMatches(h + kHeaderBytes, {kSealContext, challenge_, std::span<const uint8_t>(h, kHeaderBytes)})) return false;
    sealed_ = proven_ = true;
  }
  const size_t whole = kSealedHeaderBytes + length + kMacBytes;
  if (buffer_.size() < whole) return false;
  if (!macMatches(h + kSealedHeaderBytes + length, {challenge_, std::span<const uint8_t>(h, kSealedHeaderBytes + length)})) return false;
  ++number_;
  sealed_ = false;
  consumed_ = whole;
  payload = std::span<const uint8_t>(h + kSealedHeaderBytes, length);
  return true;
}

}  // namespace commtrace::collect
