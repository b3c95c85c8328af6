#include "ringbuffer/env_setting.h"

#include <strings.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>

namespace commtrace {

bool envFlag(const char* name, bool fallback) {
  const char* value = std::getenv(name);
  if (value == nullptr || value[0] == '\0') return fallback;
  for (const char* yes : {"1", "true", "yes", "on"}) {
    if (strcasecmp(value, yes) == 0) return true;
  }
  for (const char* no : {"0", "false", "no", "off"}) {
    if (strcasecmp(value, no) == 0) return false;
  }
  std::fprintf(stderr, "commtrace: %s=%s is not 1/0, true/false, yes/no or on/off; using %d\n", name, value,
               fallback ? 1 : 0);
  return fallback;
}

uint64_t envUint(const char* name, uint64_t fallback, uint64_t min, uint64_t max) {
  const char* value = std::getenv(name);
  if (value == nullptr || value[0] == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const unsigned long long parsed = std::strtoull(value, &end, 10);
  if (errno != 0 || *end != '\0' || value[0] == '-' || parsed < min || parsed > max) {
    std::fprintf(stderr, "commtrace: %s=%s is not a whole number in [%" PRIu64 ", %" PRIu64 "]; using %" PRIu64 "\n",
                 name, value, min, max, fallback);
    return fallback;
  }
  return parsed;
}

}  // namespace commtrace
