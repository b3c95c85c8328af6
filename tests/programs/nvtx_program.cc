// A program that uses NVTX as libraries do, through NVTX3's own header-only implementation:
// nested push/pop ranges, a domain with registered strings (as NCCL's ranges are), a
// start/end range ended on another thread, marks, a wide-string range, a pop without a push.
// Prints how many ranges it made; the test reads them back from the trace file.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <thread>

int main() {
  for (int step = 0; step < 3; ++step) {
    char name[32];
    std::snprintf(name, sizeof name, "ProfilerStep#%d", step);
    nvtxRangePushA(name);
    nvtxRangePushA("forward");
    nvtxRangePop();
    nvtxRangePushA("backward");
    nvtxMarkA("loss");
    nvtxRangePop();
    nvtxRangePop();
  }

  nvtxDomainHandle_t domain = nvtxDomainCreateA("NCCL");
  nvtxStringHandle_t allreduce = nvtxDomainRegisterStringA(domain, "AllReduce");
  nvtxEventAttributes_t attributes = {};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.category = 7;
  attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attributes.message.registered = allreduce;
  nvtxDomainRangePushEx(domain, &attributes);
  nvtxDomainRangePop(domain);

  const nvtxRangeId_t load = nvtxRangeStartA("data loading");
  std::thread([load] { nvtxRangeEnd(load); }).join();

  nvtxRangePushW(L"gr\u00fc\u00dfe");
  nvtxRangePop();
  nvtxRangePop();  // one too many: NVTX answers -1, nothing is recorded

  std::printf("done\n");
  return 0;
}
