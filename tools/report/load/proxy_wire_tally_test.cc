// A process's proxy send steps summed per peer: the time on the wire is SendWait to the
// step's end, the wait for credit before it is kept apart, and steps that say nothing about
// the wire (receives, no size, no SendWait time) are left out.
#include "tools/report/load/proxy_wire_tally.h"

#include <gtest/gtest.h>

namespace commtrace::report {
namespace {

ProxyStepRecord sendStep(int32_t peer, uint64_t bytes, uint64_t start, uint64_t peer_wait, uint64_t on_wire, uint64_t end) {
  return ProxyStepRecord{.comm_id = 0xC0, .op_index = 1, .trans_bytes = bytes, .cpu_start_ns = start, .cpu_end_ns = end,
                         .state_ns = {start, peer_wait, on_wire}, .peer = peer, .step = 0, .channel = 0, .is_send = 1};
}

TEST(ProxyWireTally, SumsEachPeersSendStepsWireTimeApartFromTheirWaits) {
  ProxyWireTally tally;
  constexpr uint64_t kStep = 512 * 1024;
  tally.add(sendStep(3, kStep, 1000, 1100, 4000, 5000));      // 2.9 us waiting for credit, 1 us on the wire
  tally.add(sendStep(3, 3 * kStep, 6000, 6000, 6000, 9000));  // all 3 us on the wire
  tally.add(sendStep(5, 2 * kStep, 1000, 1000, 1500, 11500));
  ASSERT_EQ(tally.sends().size(), 2u);
  const WireSums& to3 = tally.sends().at({0xC0, 3});
  EXPECT_EQ(to3.steps, 2u);
  EXPECT_EQ(to3.bytes, 4 * kStep);
  EXPECT_EQ(to3.wire_ns, 4000u);
  EXPECT_EQ(to3.peer_wait_ns, 2900u);
  EXPECT_EQ(tally.sends().at({0xC0, 5}).wire_ns, 10000u);
}

TEST(ProxyWireTally, LeavesOutStepsThatSayNothingAboutTheWire) {
  ProxyWireTally tally;
  constexpr uint64_t kStep = kMinWireStepBytes;
  ProxyStepRecord receive = sendStep(3, kStep, 1000, 2000, 3000, 9000);
  receive.is_send = 0;
  tally.add(receive);
  tally.add(sendStep(3, 0, 1000, 2000, 3000, 9000));              // v3 plugins forward no transSize
  tally.add(sendStep(3, kStep - 1, 1000, 2000, 3000, 9000));      // latency-bound
  tally.add(sendStep(3, kStep, 1000, 2000, 0, 9000));             // no SendWait time
  tally.add(sendStep(3, kStep, 1000, 2000, 9500, 9000));          // its end before its SendWait: clocks disagree
  EXPECT_TRUE(tally.sends().empty());
  // Faster than any network: counted apart, out of the sums.
  tally.add(sendStep(3, kStep, 1000, 1000, 1000, 1000 + kMinWireNs - 1));
  ASSERT_EQ(tally.sends().size(), 1u);
  EXPECT_EQ(tally.sends().begin()->second.steps, 0u);
  EXPECT_EQ(tally.sends().begin()->second.instant_steps, 1u);
}

}  // namespace
}  // namespace commtrace::report
