// The live link between a job's processes and its collector (`commtrace collect`), both
// halves: what a process's flusher sends and what the collector accepts.
//
// Over one TCP connection the collector speaks first: 8 bytes "CTCOLL02" and a 16-byte random
// challenge. Then the process sends messages:
//   offset 0  4  "CTDG"
//          4  4  payload length, little-endian (at most kMaxPayload)
//          8  8  message number on this connection: 0, 1, 2, ...
//         16 32  the header's seal: HMAC-SHA256 under the job's key of "seal" | challenge | bytes 0..16
//         48  n  payload: trace-file frames (frame.h), the first message's starting with the
//                FileHeader frame: a connection carries a trace file of the live kinds
//       48+n 32  HMAC-SHA256 under the job's key of challenge | bytes 0..48+n
// The challenge and the numbering make a message good on one connection and in one place only:
// a captured stream replayed, reordered or cut is refused. The key is one only the job's
// processes know (COMMTRACE_TOKEN, else the world communicator's ncclUniqueId, which NCCL
// hands every rank through the job's own bootstrap). The seal lets the collector check that a
// peer holds the key before it takes a byte of a payload: a stranger makes it hold 48 bytes,
// not a megabyte. A connection the collector refuses gets one refusal before it is closed,
// "CTNO", a 2-byte length and the reason in words, so that the process can say why.
#pragma once

#include <array>
#include <initializer_list>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/hmac_sha256.h"
#include "sink/wire.h"

namespace commtrace::collect {

using LinkKey = Sha256Digest;
using Challenge = std::array<uint8_t, 16>;

inline constexpr char kGreeting[8] = {'C', 'T', 'C', 'O', 'L', 'L', '0', '2'};
inline constexpr size_t kGreetingBytes = sizeof kGreeting + sizeof(Challenge);
inline constexpr uint8_t kMagic[4] = {'C', 'T', 'D', 'G'};
inline constexpr size_t kHeaderBytes = 16;
inline constexpr size_t kMacBytes = 32;
inline constexpr size_t kSealedHeaderBytes = kHeaderBytes + kMacBytes;
inline constexpr uint8_t kRefusalMagic[4] = {'C', 'T', 'N', 'O'};
inline constexpr size_t kMaxRefusalText = 240;
inline constexpr uint32_t kMaxPayload = 1u << 20;  // a second of one process's live records is a few KB

LinkKey keyFromToken(std::string_view token);
LinkKey keyFromUniqueId(std::span<const uint8_t> unique_id);

// How rank 0 hands the key to the collector it starts (on a pipe): 64 lowercase hex digits.
inline constexpr size_t kKeyHexDigits = 2 * sizeof(LinkKey);
void keyToHex(const LinkKey& key, char (&hex)[kKeyHexDigits]);
// false unless `hex` is exactly 64 hex digits.
bool keyFromHex(std::string_view hex, LinkKey& key);

void appendGreeting(wire::Bytes& out, const Challenge& challenge);
// The challenge from the collector's first bytes; false if they are not a greeting.
bool parseGreeting(std::span<const uint8_t> bytes, Challenge& challenge);

void appendMessage(wire::Bytes& out, const LinkKey& key, const Challenge& challenge, uint64_t number,
                   std::span<const uint8_t> payload);

// The collector's last words to a peer it refuses (the reason, cut to kMaxRefusalText).
void appendRefusal(wire::Bytes& out, std::string_view reason);
// The reason from what a refusing collector sent; false if `bytes` are not a whole refusal.
bool parseRefusal(std::span<const uint8_t> bytes, std::string& reason);

// The collector's side of one connection: bytes in as they arrive, whole authenticated
// payloads out. The first fault (bad magic, oversize, wrong number, wrong seal or MAC) ends it.
class MessageReader {
 public:
  MessageReader(const LinkKey& key, const Challenge& challenge) : key_(key), challenge_(challenge) {}

  void feed(std::span<const uint8_t> bytes) { buffer_.insert(buffer_.end(), bytes.begin(), bytes.end()); }
  // The next whole message's payload (valid until the next call); false when none is whole
  // yet or after a fault (fault() says which).
  bool next(std::span<const uint8_t>& payload);
  // A fixed phrase ("not a commtrace digest"), or empty.
  const std::string& fault() const { return fault_; }
  uint64_t messages() const { return number_; }
  // Bytes received and not yet handed out.
  size_t buffered() const { return buffer_.size() - consumed_; }
  // Whether a header sealed with the key came on this connection: until one has, the peer may
  // be anyone, and the reader takes no byte past the sealed header it waits for.
  bool proven() const { return proven_; }
  // The most bytes feed() should be given now: until proven, what completes the sealed header.
  size_t acceptable() const;

 private:
  // Whether the 32 bytes at `mac` are the key's MAC of `parts`; the fault set if not.
  bool macMatches(const uint8_t* mac, std::initializer_list<std::span<const uint8_t>> parts);

  HmacKey key_;
  Challenge challenge_;
  wire::Bytes buffer_;
  size_t consumed_ = 0;  // bytes of buffer_ handed out
  uint64_t number_ = 0;
  bool sealed_ = false;  // the current message's header seal checked
  bool proven_ = false;
  std::string fault_;
};

}  // namespace commtrace::collect
