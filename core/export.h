// How libcommtrace.so marks an entry point it exports (the library is built with hidden
// visibility; exports.map is the list of what may be exported).
#pragma once

#define COMMTRACE_EXPORT extern "C" __attribute__((visibility("default")))
