// The quantile sketch: exact answers equal to percentile() up to the limit, answers within the
// stated relative error past it, zero kept exactly, merges independent of order and grouping,
// memory bounded by the values' range, and unusable values counted rather than kept.
#include "tools/report/load/quantile_sketch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "tools/report/load/stats.h"

using commtrace::report::percentile;
using commtrace::report::QuantileSketch;

namespace {

constexpr double kProbes[] = {0, 0.01, 0.5, 0.9, 0.99, 1};
// A value on a bucket boundary may land on either side when log() rounds; either side is
// kRelativeError away, give or take that rounding.
constexpr double kErrorBound = QuantileSketch::kRelativeError + 1e-12;

QuantileSketch sketchOf(const std::vector<double>& values) {
  QuantileSketch sketch;
  for (double value : values) sketch.add(value);
  return sketch;
}

double exactQuantile(std::vector<double> values, double p) { return percentile(values, p); }

double relativeError(double estimate, double exact) {
  if (exact == 0) return estimate == 0 ? 0 : std::numeric_limits<double>::infinity();
  return std::abs(estimate - exact) / exact;
}

void expectWithinBound(const QuantileSketch& sketch, const std::vector<double>& values) {
  ASSERT_FALSE(sketch.exact());
  for (double p : kProbes) {
    EXPECT_LE(relativeError(sketch.quantile(p), exactQuantile(values, p)), kErrorBound) << "p=" << p;
  }
}

// n values drawn from dist, seeded.
template <class Distribution>
std::vector<double> drawn(size_t n, uint32_t seed, Distribution dist) {
  std::mt19937_64 rng(seed);
  std::vector<double> values(n);
  for (double& value : values) value = static_cast<double>(dist(rng));
  return values;
}

std::vector<double> uniform(size_t n, double lo, double hi, uint32_t seed) {
  return drawn(n, seed, std::uniform_real_distribution<double>(lo, hi));
}

std::vector<double> logNormal(size_t n, uint32_t seed) { return drawn(n, seed, std::lognormal_distribution<double>(10, 2)); }

// Two clusters four decades apart, like intra- and inter-node transfer times.
std::vector<double> bimodal(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> fast(1e3, 50);
  std::normal_distribution<double> slow(1e7, 1e6);
  std::bernoulli_distribution pickSlow(0.3);
  std::vector<double> values(n);
  for (double& value : values) value = std::abs(pickSlow(rng) ? slow(rng) : fast(rng));
  return values;
}

// Values 0 .. 4: duplicates, zeros among them.
std::vector<double> smallIntegers(size_t n, uint32_t seed) { return drawn(n, seed, std::uniform_int_distribution<int>(0, 4)); }

std::vector<double> concat(std::initializer_list<const std::vector<double>*> parts) {
  std::vector<double> all;
  for (const auto* part : parts) all.insert(all.end(), part->begin(), part->end());
  return all;
}

QuantileSketch merged(QuantileSketch a, const QuantileSketch& b) {
  a.merge(b);
  return a;
}

TEST(QuantileSketch, EmptyAnswersZero) {
  const QuantileSketch sketch;
  EXPECT_EQ(sketch.count(), 0u);
  EXPECT_TRUE(sketch.exact());
  EXPECT_EQ(sketch.quantile(0.5), 0);
}

TEST(QuantileSketch, ExactModeEqualsPercentile) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> anyP(0, 1);
  std::vector<double> probes(std::begin(kProbes), std::end(kProbes));
  for (int i = 0; i < 20; ++i) probes.push_back(anyP(rng));
  for (size_t n : {size_t{1}, size_t{2}, size_t{3}, size_t{10}, size_t{999}, QuantileSketch::kExactLimit}) {
    // Distinct doubles, and small integers with many duplicates and zeros.
    for (const auto& values : {uniform(n, 0, 1e6, 1), smallIntegers(n, 2)}) {
      const QuantileSketch sketch = sketchOf(values);
      ASSERT_TRUE(sketch.exact());
      EXPECT_EQ(sketch.count(), n);
      for (double p : probes) EXPECT_EQ(sketch.quantile(p), exactQuantile(values, p)) << "n=" << n << " p=" << p;
    }
  }
}

TEST(QuantileSketch, SketchModeIsWithinTheRelativeError) {
  constexpr size_t kN = 100'000;
  for (const auto& values : {uniform(kN, 0, 1e6, 3), uniform(kN, 1e-3, 1e12, 4), logNormal(kN, 5), bimodal(kN, 6)}) {
    expectWithinBound(sketchOf(values), values);
  }
}

TEST(QuantileSketch, RepeatedValuesStayExactWhateverTheirCount) {
  std::vector<double> values(5000, 0.0);
  values.resize(10'000, 3.5);
  values.resize(1'000'000, 13107200.0);  // a million AllReduces of one size
  const QuantileSketch sketch = sketchOf(values);
  ASSERT_TRUE(sketch.exact());
  EXPECT_EQ(sketch.buckets(), 0u);
  for (double p : {0.0, 0.005, 0.00501, 0.01, 0.5, 1.0}) EXPECT_EQ(sketch.quantile(p), exactQuantile(values, p)) << p;
}

TEST(QuantileSketch, ZeroAndDuplicatesSurviveTheSketch) {
  std::vector<double> values(5000, 0.0);
  values.resize(10'000, 3.5);
  std::vector<double> distinct = logNormal(QuantileSketch::kExactLimit, 21);  // pushes it past exact
  values.insert(values.end(), distinct.begin(), distinct.end());
  const QuantileSketch sketch = sketchOf(values);
  ASSERT_FALSE(sketch.exact());
  EXPECT_EQ(sketch.quantile(0), 0);
  EXPECT_EQ(sketch.quantile(5000.0 / values.size()), 0);  // the last zero
  EXPECT_LE(relativeError(sketch.quantile(5001.0 / values.size()), 3.5), kErrorBound);
  expectWithinBound(sketch, values);
}

TEST(QuantileSketch, MergeIsIndependentOfOrderAndGrouping) {
  // a and b stay exact together; c alone is past the limit.
  const std::vector<double> a = logNormal(3000, 8), b = smallIntegers(1000, 9), c = bimodal(50'000, 10);
  const QuantileSketch sa = sketchOf(a), sb = sketchOf(b), sc = sketchOf(c);
  const QuantileSketch reference = sketchOf(concat({&a, &b, &c}));
  const QuantileSketch orders[] = {
      merged(merged(sa, sb), sc), merged(sa, merged(sb, sc)), merged(merged(sc, sa), sb),
      merged(sb, merged(sc, sa)), merged(merged(sc, sb), sa), merged(merged(sb, sa), sc)};
  for (const QuantileSketch& sketch : orders) {
    EXPECT_EQ(sketch.count(), reference.count());
    EXPECT_EQ(sketch.buckets(), reference.buckets());
    for (double p : kProbes) EXPECT_EQ(sketch.quantile(p), reference.quantile(p)) << "p=" << p;
  }
  expectWithinBound(reference, concat({&a, &b, &c}));
}

TEST(QuantileSketch, ExactMergeEqualsPercentileOfTheUnion) {
  const std::vector<double> a = logNormal(1000, 11), b = smallIntegers(2000, 12), c = uniform(1096, 0, 1, 13);
  const QuantileSketch sa = sketchOf(a), sb = sketchOf(b), sc = sketchOf(c);
  const std::vector<double> all = concat({&a, &b, &c});
  for (const QuantileSketch& sketch : {merged(merged(sa, sb), sc), merged(sc, merged(sb, sa))}) {
    ASSERT_TRUE(sketch.exact());
    for (double p : kProbes) EXPECT_EQ(sketch.quantile(p), exactQuantile(all, p)) << "p=" << p;
  }
}

TEST(QuantileSketch, AddSwitchesToBucketsOneValuePastTheLimit) {
  std::vector<double> values = logNormal(QuantileSketch::kExactLimit + 1, 14);
  QuantileSketch sketch;
  for (size_t i = 0; i < QuantileSketch::kExactLimit; ++i) sketch.add(values[i]);
  EXPECT_TRUE(sketch.exact());
  EXPECT_EQ(sketch.buckets(), 0u);
  sketch.add(values.back());
  EXPECT_FALSE(sketch.exact());
  EXPECT_EQ(sketch.count(), QuantileSketch::kExactLimit + 1);
  EXPECT_GT(sketch.buckets(), 0u);
  expectWithinBound(sketch, values);
}

TEST(QuantileSketch, MergeSwitchesToBucketsPastTheLimit) {
  const std::vector<double> a = logNormal(QuantileSketch::kExactLimit / 2, 15);
  const std::vector<double> b = logNormal(QuantileSketch::kExactLimit / 2, 16);
  const std::vector<double> one = {42};
  const QuantileSketch atLimit = merged(sketchOf(a), sketchOf(b));
  EXPECT_TRUE(atLimit.exact());
  const QuantileSketch pastLimit = merged(atLimit, sketchOf(one));
  EXPECT_FALSE(pastLimit.exact());
  EXPECT_EQ(pastLimit.count(), QuantileSketch::kExactLimit + 1);
  expectWithinBound(pastLimit, concat({&a, &b, &one}));
}

TEST(QuantileSketch, IgnoresNegativeNanAndInfinity) {
  const double unusable[] = {-1, -1e-300, std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
  QuantileSketch small;
  for (double value : {1.0, 2.0, 3.0}) small.add(value);
  for (double value : unusable) small.add(value);
  EXPECT_EQ(small.count(), 3u);
  EXPECT_EQ(small.ignored(), 5u);
  EXPECT_EQ(small.quantile(0), 1);
  EXPECT_EQ(small.quantile(1), 3);

  const std::vector<double> values = uniform(10'000, 1, 2, 17);
  QuantileSketch large = sketchOf(values);
  for (double value : unusable) large.add(value);
  large.merge(small);
  EXPECT_EQ(large.count(), 10'003u);
  EXPECT_EQ(large.ignored(), 10u);
  EXPECT_LE(relativeError(large.quantile(1), 3), kErrorBound);
  EXPECT_LE(relativeError(large.quantile(0), 1), kErrorBound);
}

TEST(QuantileSketch, MemoryIsBoundedByTheRangeNotTheCount) {
  // Log-uniform over fifteen decades: every bucket of the range gets values.
  constexpr double kLo = 1e-3, kHi = 1e12;
  const double logGamma = std::log((1 + QuantileSketch::kRelativeError) / (1 - QuantileSketch::kRelativeError));
  const size_t rangeBuckets = static_cast<size_t>(std::ceil(std::log(kHi / kLo) / logGamma)) + 1;
  ASSERT_LT(rangeBuckets, 2000u);
  std::mt19937_64 rng(18);
  std::uniform_real_distribution<double> exponent(std::log(kLo), std::log(kHi));
  QuantileSketch sketch;
  for (int i = 0; i < 10'000'000; ++i) sketch.add(std::exp(exponent(rng)));
  EXPECT_EQ(sketch.count(), 10'000'000u);
  EXPECT_GT(sketch.buckets(), rangeBuckets - 10);
  EXPECT_LE(sketch.buckets(), rangeBuckets);
}

}  // namespace

namespace {

using commtrace::report::SignedQuantileSketch;

// Differences of durations (a gap's excess over its peers') have either sign: exact answers
// equal percentile() over the values as they are, zero and all.
TEST(SignedQuantileSketch, ExactModeEqualsPercentileOverBothSigns) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> noise(-3, 10);
  for (size_t n : {size_t{1}, size_t{2}, size_t{7}, size_t{1000}}) {
    std::vector<double> values;
    SignedQuantileSketch sketch;
    for (size_t i = 0; i < n; ++i) {
      const double v = i % 5 == 0 ? 0.0 : std::round(noise(rng) * 100) / 100;
      values.push_back(v);
      sketch.add(v);
    }
    ASSERT_TRUE(sketch.exact());
    EXPECT_EQ(sketch.count(), n);
    for (double p : {0.0, 0.01, 0.25, 0.5, 0.75, 0.99, 1.0}) EXPECT_EQ(sketch.quantile(p), exactQuantile(values, p)) << "n=" << n << " p=" << p;
  }
  const std::vector<double> all_negative = {-5, -1, -3};
  SignedQuantileSketch negative;
  for (double v : all_negative) negative.add(v);
  EXPECT_EQ(negative.quantile(0.5), -3);
  EXPECT_EQ(negative.quantile(0), -5);
  EXPECT_EQ(negative.quantile(1), -1);
}

TEST(SignedQuantileSketch, MergedHalvesEqualTheWhole) {
  SignedQuantileSketch whole, halves[2];
  for (int i = -500; i < 700; ++i) {
    const double v = i * 0.37;
    whole.add(v);
    halves[(i & 1) != 0].add(v);
  }
  halves[0].merge(halves[1]);
  for (double p : {0.0, 0.3, 0.5, 0.9, 1.0}) EXPECT_EQ(halves[0].quantile(p), whole.quantile(p)) << p;
}

}  // namespace
