// What keys the job's live link (sink/collect_protocol.h): a secret only the job's processes
// share. The NCCL wrappers note the world communicator's ncclUniqueId as it is created (rank 0
// made it and the job's own bootstrap handed it to every rank); the flusher reads it. Any
// thread; the first secret noted stays.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>

namespace commtrace {

inline constexpr size_t kJobSecretBytes = 128;  // an ncclUniqueId
using JobSecret = std::array<uint8_t, kJobSecretBytes>;

void noteJobSecret(std::span<const uint8_t> secret);
std::optional<JobSecret> jobSecret();

// The process has made an NCCL communicator (either face saw one): it is one of the job's
// ranks, worth a live link.
void noteCommunicatorMade();
bool communicatorMade();

// In a forked child (pthread_atfork child handler; allocation-free): the child has made no
// communicator of its own, and a DataLoader worker must neither send digests nor start a
// second collector as if it were its parent rank.
void forgetJobAfterFork();

}  // namespace commtrace
