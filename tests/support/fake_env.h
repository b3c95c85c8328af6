// An environment for code that reads it through an EnvLookup (core/env_lookup.h): the
// variables a test sets, and nothing else.
#pragma once

#include <map>
#include <string>

#include "core/env_lookup.h"

namespace commtrace::testutil {

class FakeEnv {
 public:
  // Replaces the variables; the returned lookup sees these until the next set().
  static EnvLookup set(std::map<std::string, std::string> variables) {
    values() = std::move(variables);
    return &lookup;
  }

 private:
  static std::map<std::string, std::string>& values() {
    static std::map<std::string, std::string> v;
    return v;
  }
  static const char* lookup(const char* name) {
    const auto it = values().find(name);
    return it == values().end() ? nullptr : it->second.c_str();
  }
};

}  // namespace commtrace::testutil
