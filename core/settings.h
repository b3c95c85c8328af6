// Every COMMTRACE_* setting, declared once: name, kind, default, range and what it changes.
// The library parses the environment once (its constructor, or the first communicator or
// commtrace_start() in a program that links the faces without it); every face then reads a
// plain global, so a wrapper's hot path pays one load. A bad value gets one "commtrace:"
// line naming it and the default used, never a failure. `commtrace settings` prints this
// table, and the README's table is checked against it.
#pragma once

#include <limits.h>

#include <cstdint>
#include <span>
#include <string_view>

#include "core/env_lookup.h"

namespace commtrace {

struct Settings {
  char dir[PATH_MAX] = "";  // empty: runDirectory() picks commtrace-run/<job id>
  uint32_t flush_period_ms = 200;
  uint32_t exit_flush_ms = 1000;
  uint32_t ring_memory_mb = 256;
  bool tsc = true;
  bool kernel_timing = true;
  bool proxy_events = false;
  bool nccl_api = true;
  bool cuda_sync = true;
  bool nvtx = true;
  uint32_t stacks = 1024;  // one op in this many has its call stack sampled; 0: none
  uint32_t cupti = 1;  // a CuptiMode
  uint32_t cupti_window_s = 5;
  uint32_t cupti_period_s = 60;
  char cupti_lib[PATH_MAX] = "";  // empty: the libcupti the process has, else the toolkit's
  bool live = true;
  uint32_t collect_port = 29517;
  uint32_t metrics_port = 0;  // 0: the collector rank 0 starts serves no /metrics
  char prom_dir[PATH_MAX] = "";  // empty: no metrics files
};

// COMMTRACE_CUPTI, in the order its choices are listed.
enum CuptiMode : uint32_t { kCuptiOff = 0, kCuptiOn = 1, kCuptiSampled = 2 };

enum class SettingKind : uint8_t {
  kFlag,         // 1/0, true/false, yes/no, on/off (any case)
  kWholeNumber,  // decimal, within [min, max]
  kChoice,       // one of `choices` (any case), held as its index in `number`
  kPath,         // at most PATH_MAX - 1 bytes; empty by default (default_note says what that means)
  kText,         // read where it is used (process identity), not parsed into Settings
};

struct SettingSpec {
  std::string_view name;
  SettingKind kind;
  std::string_view help;
  bool Settings::*flag = nullptr;
  uint32_t Settings::*number = nullptr;
  char (Settings::*path)[PATH_MAX] = nullptr;
  uint32_t min = 0, max = 0;
  std::span<const std::string_view> choices = {};
  std::string_view default_note = {};  // for kText, or what the default means
};

// Every setting, in the order the README lists them.
std::span<const SettingSpec> settingSpecs();

// The defaults, as Settings{} holds them; a kText setting's default_note.
const Settings& defaultSettings();

// Parses the variables lookup finds (unset or empty: the default), warning on stderr once
// per bad value. The process's settings come from parseSettings(getenv) via loadSettings().
Settings parseSettings(EnvLookup lookup);

// Parses the environment into the process's settings the first time it is called; later
// calls (any thread) return at once. Cold paths only.
void loadSettings();

// The process's settings: the defaults until loadSettings() ran. constinit: a hot path
// reads it directly, with no init guard.
extern constinit Settings g_settings;
inline const Settings& settings() { return g_settings; }

}  // namespace commtrace
