#include "core/settings.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "tests/support/fake_env.h"

namespace commtrace {
namespace {

Settings parseWith(std::map<std::string, std::string> env, std::string* warnings = nullptr) {
  const EnvLookup lookup = testutil::FakeEnv::set(std::move(env));
  ::testing::internal::CaptureStderr();
  Settings s = parseSettings(lookup);
  const std::string err = ::testing::internal::GetCapturedStderr();
  if (warnings != nullptr) *warnings = err;
  return s;
}

TEST(SettingsTest, UnsetOrEmptyGivesTheDefaults) {
  std::string warnings;
  const Settings s = parseWith({{"COMMTRACE_FLUSH_MS", ""}}, &warnings);
  EXPECT_EQ(s.flush_period_ms, 200u);
  EXPECT_EQ(s.exit_flush_ms, 1000u);
  EXPECT_STREQ(s.dir, "");
  EXPECT_TRUE(s.kernel_timing);
  EXPECT_FALSE(s.proxy_events);
  EXPECT_TRUE(s.nccl_api);
  EXPECT_TRUE(s.cuda_sync);
  EXPECT_EQ(warnings, "");
}

TEST(SettingsTest, ParsesEveryKind) {
  const Settings s = parseWith({{"COMMTRACE_FLUSH_MS", "250"},
                                {"COMMTRACE_EXIT_FLUSH_MS", "0"},
                                {"COMMTRACE_DIR", "/tmp/run"},
                                {"COMMTRACE_KERNEL_TIMING", "Off"},
                                {"COMMTRACE_PROXY_EVENTS", "YES"},
                                {"COMMTRACE_NCCL_API", "false"},
                                {"COMMTRACE_CUDA_SYNC", "0"}});
  EXPECT_EQ(s.flush_period_ms, 250u);
  EXPECT_EQ(s.exit_flush_ms, 0u);
  EXPECT_STREQ(s.dir, "/tmp/run");
  EXPECT_FALSE(s.kernel_timing);
  EXPECT_TRUE(s.proxy_events);
  EXPECT_FALSE(s.nccl_api);
  EXPECT_FALSE(s.cuda_sync);
}

TEST(SettingsTest, BadValuesKeepTheDefaultWithOneLineEach) {
  for (const char* bad : {"-1", "12ab", "5", "99999", "1e3", "+20"}) {
    std::string warnings;
    const Settings s = parseWith({{"COMMTRACE_FLUSH_MS", bad}}, &warnings);
    EXPECT_EQ(s.flush_period_ms, 200u) << bad;
    EXPECT_EQ(warnings, "commtrace: COMMTRACE_FLUSH_MS=" + std::string(bad) +
                            " is not a whole number in [10, 60000]; using 200\n");
  }
  std::string warnings;
  const Settings s = parseWith({{"COMMTRACE_PROXY_EVENTS", "sometimes"}, {"COMMTRACE_DIR", std::string(PATH_MAX, 'd')}},
                               &warnings);
  EXPECT_FALSE(s.proxy_events);
  EXPECT_STREQ(s.dir, "");
  EXPECT_EQ(warnings,
            "commtrace: COMMTRACE_DIR is longer than " + std::to_string(PATH_MAX - 1) + " bytes; using commtrace-run/<job id>\n"
            "commtrace: COMMTRACE_PROXY_EVENTS=sometimes is not 1/0, true/false, yes/no or on/off; using 0\n");
}

TEST(SettingsTest, ChoicesAreNamedInAnyCaseAndABadOneIsListedWithTheDefault) {
  EXPECT_EQ(parseWith({}).cupti, kCuptiOn);
  EXPECT_EQ(parseWith({{"COMMTRACE_CUPTI", "Sampled"}}).cupti, kCuptiSampled);
  EXPECT_EQ(parseWith({{"COMMTRACE_CUPTI", "off"}}).cupti, kCuptiOff);
  std::string warnings;
  EXPECT_EQ(parseWith({{"COMMTRACE_CUPTI", "sometimes"}}, &warnings).cupti, kCuptiOn);
  EXPECT_EQ(warnings, "commtrace: COMMTRACE_CUPTI=sometimes is not one of off, on, sampled; using on\n");
  const Settings s = parseWith({{"COMMTRACE_CUPTI_LIB", "/opt/cupti/libcupti.so.13"}, {"COMMTRACE_CUPTI_WINDOW_S", "10"}});
  EXPECT_STREQ(s.cupti_lib, "/opt/cupti/libcupti.so.13");
  EXPECT_EQ(s.cupti_window_s, 10u);
}

TEST(SettingsTest, EachSettingIsDeclaredOnceWithHelpAndATarget) {
  std::set<std::string_view> names;
  for (const SettingSpec& spec : settingSpecs()) {
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
    EXPECT_EQ(spec.name.rfind("COMMTRACE_", 0), 0u) << spec.name;
    EXPECT_FALSE(spec.help.empty()) << spec.name;
    const int targets = (spec.flag != nullptr) + (spec.number != nullptr) + (spec.path != nullptr);
    EXPECT_EQ(targets, spec.kind == SettingKind::kText ? 0 : 1) << spec.name;
    if (spec.kind == SettingKind::kChoice) {
      EXPECT_LT(defaultSettings().*spec.number, spec.choices.size()) << spec.name;
    }
    if (spec.kind == SettingKind::kWholeNumber) {
      EXPECT_LE(spec.min, defaultSettings().*spec.number) << spec.name;
      EXPECT_GE(spec.max, defaultSettings().*spec.number) << spec.name;
    }
  }
}

}  // namespace
}  // namespace commtrace
