// Which ncclProfiler_v7 layout the plugin reads, played in-process through the NCCL driver's
// binding: NVIDIA NCCL 2.31+ gets its v7 fields (user tags) read; any other caller of v7
// (an unknown version, no ncclGetVersion, a build that hands v7 the v6-sized descriptor)
// is read as v6, and the sanitizer builds would catch a read past a v6 descriptor. Bit 15
// of the mask (KernelPhase in 2.31, something else elsewhere) is never set. The layout is
// decided once per process, so each case runs in a child.
#include <gtest/gtest.h>

#include <cstdlib>

#include "ringbuffer/ringbuffer.h"
#include "tools/nccl-driver/profiler_host.h"
#include "tools/nccl-driver/rank_player.h"

namespace commtrace {
namespace {

using namespace driver;

struct V7Case {
  int nccl_version;
  bool v6_descriptors;
  bool user_tags_read;
};

// Plays rank 0 of the demo (one AllReduce tagged 42 per step) and exits 0 when the plugin
// recorded every planted collective, the tags as expected, and no bit 15 in the mask.
[[noreturn]] void playAndExit(const V7Case& c) {
  const Scenario scenario = loadScenario(DEMO_SCENARIO_PATH);
  const Timeline timeline = buildTimeline(scenario);
  HostOptions options;
  options.plugin = "STATIC_PLUGIN";  // this test program holds the plugin's exported tables
  options.forced_version = 7;
  options.nccl_version = c.nccl_version;
  options.v6_descriptors_as_v7 = c.v6_descriptors;
  ProfilerHost host(options);
  RankPlayer(scenario, timeline, 0, host).play();
  uint64_t colls = 0, tagged = 0, other_tags = 0;
  RingRegistry::global().forEachRing([&](ThreadRing& ring) {
    ring.drain([&](const RecordSlot& s) {
      if (s.kind != RecordKind::kColl) return;
      ++colls;
      if (s.payload.coll.user_tag == 42) ++tagged;
      else if (s.payload.coll.user_tag != 0) ++other_tags;  // junk read past a v6 descriptor
    });
  });
  const uint64_t expected_tagged = c.user_tags_read ? static_cast<uint64_t>(scenario.steps) : 0;
  const bool ok = host.boundVersion() == 7 && colls == timeline.ranks[0].planted_colls && tagged == expected_tagged &&
                  other_tags == 0 && (host.mask() & (1 << 15)) == 0;
  if (!ok) std::fprintf(stderr, "bound v%d, %llu of %llu collectives, %llu tagged 42, %llu other tags, mask %#x\n",
                        host.boundVersion(), static_cast<unsigned long long>(colls),
                        static_cast<unsigned long long>(timeline.ranks[0].planted_colls),
                        static_cast<unsigned long long>(tagged), static_cast<unsigned long long>(other_tags), host.mask());
  std::exit(ok ? 0 : 1);
}

TEST(V7LayoutTest, NvidiaNccl231GetsItsV7FieldsRead) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(playAndExit({23102, false, true}), ::testing::ExitedWithCode(0), "");
}

TEST(V7LayoutTest, AV6DescriptorUnderTheV7NameIsReadAsV6) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(playAndExit({22809, true, false}), ::testing::ExitedWithCode(0),
              "commtrace: ncclProfiler_v7 bound by NCCL 22809, whose v7 layout commtrace does not know; v7 events are "
              "read as v6");
}

TEST(V7LayoutTest, WithoutNcclGetVersionV7IsReadAsV6) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(playAndExit({0, true, false}), ::testing::ExitedWithCode(0), "no ncclGetVersion was found");
}

}  // namespace
}  // namespace commtrace
