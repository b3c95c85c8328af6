// How core reads the environment: getenv, or a test's table in its place.
#pragma once

namespace commtrace {

// nullptr when the variable is unset.
using EnvLookup = const char* (*)(const char* name);

}  // namespace commtrace
