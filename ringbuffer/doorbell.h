// How a producer asks the flusher to drain early without blocking: the first ring to pass
// half full since the flusher last woke raises a flag, and makes a futex wake only if the
// flusher is asleep (a wake costs tens of microseconds on a VM). The flusher sleeps on the
// doorbell with a timeout (its flush period).
#pragma once

#include <atomic>
#include <cstdint>

namespace commtrace {

// The futex calls the doorbell is made of, for other threads that wait on a 32-bit word.
// Both are async-signal-safe. futexWait sleeps while word == expected, at most timeout_ns,
// and may return early (a wake, a signal): callers re-check their condition.
void futexWait(std::atomic<uint32_t>& word, uint32_t expected, uint64_t timeout_ns);
void futexWakeAll(std::atomic<uint32_t>& word);

class Doorbell {
 public:
  // Producer side: cheap when already rung; one FUTEX_WAKE syscall otherwise.
  void ring();
  // Flusher side: sleeps up to timeout_ns unless rung since the last wait. Returns true if
  // it was rung.
  bool wait(uint64_t timeout_ns);

 private:
  std::atomic<uint32_t> rung_{0};
  std::atomic<uint32_t> sleeping_{0};
};

}  // namespace commtrace
