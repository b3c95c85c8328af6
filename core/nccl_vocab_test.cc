#include "core/nccl_vocab.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace commtrace::nccl {
namespace {

TEST(NcclVocabTest, FuncsAreIndexedByTheirEnumAndNamedOnce) {
  std::set<std::string_view> names;
  for (int i = 0; i < kFuncCount; ++i) {
    EXPECT_EQ(static_cast<int>(kFuncs[i].func), i);
    EXPECT_TRUE(names.insert(kFuncs[i].name).second) << kFuncs[i].name;
    EXPECT_EQ(findFunc(kFuncs[i].name), &kFuncs[i]);
    EXPECT_EQ(kFuncs[i].name.data()[kFuncs[i].name.size()], '\0') << "descriptors need C strings";
  }
  EXPECT_EQ(findFunc("SendRecv"), nullptr);
  EXPECT_EQ(findFunc("allreduce"), nullptr) << "NCCL's spelling only";
}

TEST(NcclVocabTest, ShapesAndRoots) {
  EXPECT_TRUE(isCollective(Func::kReduceScatter));
  EXPECT_FALSE(isCollective(Func::kAlltoAll));
  EXPECT_EQ(funcInfo(Func::kGather).shape, FuncShape::kPieces);
  EXPECT_EQ(funcInfo(Func::kRecv).shape, FuncShape::kRecv);
  for (Func rooted : {Func::kBroadcast, Func::kReduce, Func::kGather, Func::kScatter}) EXPECT_TRUE(funcInfo(rooted).rooted);
  EXPECT_FALSE(funcInfo(Func::kAllReduce).rooted);
}

TEST(NcclVocabTest, NcclTestsFactorsAndSizes) {
  EXPECT_DOUBLE_EQ(busBwFactor("AllReduce", 8), 2.0 * 7 / 8);
  for (const char* f : {"AllGather", "ReduceScatter", "AlltoAll", "Gather", "Scatter"}) {
    EXPECT_DOUBLE_EQ(busBwFactor(f, 8), 7.0 / 8) << f;
    EXPECT_EQ(ncclTestsBytes(f, 100, 8), 800u) << f;
  }
  for (const char* f : {"Broadcast", "Reduce", "Send", "Recv", "SendRecv", ""}) {
    EXPECT_DOUBLE_EQ(busBwFactor(f, 8), 1.0) << f;
    EXPECT_EQ(ncclTestsBytes(f, 100, 8), 100u) << f;
  }
  EXPECT_EQ(ncclTestsBytes("AllReduce", 100, 8), 100u);
  EXPECT_TRUE(isSynchronizing("AllGather"));
  EXPECT_FALSE(isSynchronizing("Broadcast"));
}

TEST(NcclVocabTest, DatatypesWithNcclsUnknownQuirk) {
  EXPECT_EQ(datatypeByValue(kUint8)->name, "ncclUint8");
  EXPECT_EQ(datatypeByValue(kUint8)->descr_name, "Unknown") << "ncclDatatypeToString has no ncclUint8 case";
  EXPECT_EQ(sizeOfNamed("Unknown"), 0u) << "its size stays unknown";
  EXPECT_EQ(sizeOfNamed("ncclBfloat16"), 2u);
  EXPECT_EQ(sizeOfNamed("ncclDouble"), 8u) << "aliases";
  EXPECT_EQ(findDatatype("ncclHalf"), &kDatatypes[kFloat16]);
  EXPECT_EQ(datatypeByValue(12), nullptr);
  EXPECT_EQ(datatypeByValue(-1), nullptr);
}

TEST(NcclVocabTest, AlgorithmsProtocolsAndResults) {
  EXPECT_EQ(algoName(Algo::kNvlsTree), "NVLS_TREE");
  EXPECT_EQ(protoName(Proto::kLL128), "LL128");
  EXPECT_NE(findName(kAlgoNames, "PAT"), nullptr);
  EXPECT_EQ(findName(kAlgoNames, "Ring"), nullptr) << "the tuning-table spelling is not the descriptors'";
  EXPECT_EQ(resultName(kInProgress), "ncclInProgress");
  EXPECT_EQ(resultName(42), "ncclResult?");
}

TEST(NcclVocabTest, NcclKernelsByNameAsKinetoShowsThemAndAsCuptiReportsThem) {
  EXPECT_TRUE(isNcclKernelName("ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
  EXPECT_TRUE(isNcclKernelName("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"));
  EXPECT_TRUE(isNcclKernelName("_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE"));
  EXPECT_FALSE(isNcclKernelName("_ZN7cutlass7Kernel2I43cutlass_80_simt_sgemm_256x128_8x4_nn_align1EEvNT_6ParamsE"));
  EXPECT_FALSE(isNcclKernelName("_Z20my_nccl_like_kernelPf"));
  EXPECT_FALSE(isNcclKernelName("ampere_sgemm_128x64_nn"));
  EXPECT_FALSE(isNcclKernelName("_Z"));
}

}  // namespace
}  // namespace commtrace::nccl
