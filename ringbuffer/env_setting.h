// COMMTRACE_* settings from the environment, shared by every face. Read on cold paths only
// (library load, communicator init). A bad value is reported once on stderr, naming the
// setting, the value and what is used instead, and never stops the host program.
#pragma once

#include <cstdint>

namespace commtrace {

// 1/0, true/false, yes/no, on/off (any case); unset or empty gives fallback.
bool envFlag(const char* name, bool fallback);

// A decimal integer in [min, max]; unset or empty gives fallback.
uint64_t envUint(const char* name, uint64_t fallback, uint64_t min, uint64_t max);

}  // namespace commtrace
