// Builds a RunModel by hand, as the loader would have joined it, for tests of what reads
// one: ops are added in the order the ranks issued them (each process's CPU start times
// count up in that order), GPU times are given per member.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tools/report/run_model.h"

namespace commtrace::testutil {

class HandBuiltRun {
 public:
  using Gpu = std::pair<uint64_t, uint64_t>;  // start, end on the member's GPU clock; {0, 0}: not recorded

  int addProcess(int rank, const std::string& host) {
    report::ProcessInfo p;
    p.rank = rank;
    p.host = host;
    p.path = "rank" + std::to_string(rank) + ".ctrace";
    run.processes.push_back(p);
    run.timelines.emplace_back();
    issued_.push_back(0);
    return static_cast<int>(run.processes.size()) - 1;
  }

  // Comm rank i is processes[i]; global ranks are those processes' ranks.
  uint32_t addComm(uint64_t id, const std::string& name, const std::vector<int>& processes) {
    report::Communicator c;
    c.id = id;
    c.name = run.names.intern(name);
    c.size = static_cast<int>(processes.size());
    c.processes = processes;
    for (int p : processes) c.global_ranks.push_back(run.processes[p].rank);
    run.comms.push_back(c);
    return static_cast<uint32_t>(run.comms.size()) - 1;
  }

  report::CollInstance& addCollective(uint32_t comm, const std::string& func, uint64_t bytes, const std::vector<Gpu>& gpu,
                                      uint64_t stream = 0x7f00) {
    report::CollInstance c;
    c.comm = comm;
    c.func = run.names.intern(func);
    c.algo = run.names.intern("RING");
    c.proto = run.names.intern("SIMPLE");
    c.datatype = run.names.intern("ncclFloat32");
    c.bytes = bytes;
    c.count = bytes / 4;
    c.n_channels = 2;
    c.op_index = next_op_index_[comm]++;
    c.seq = c.op_index;
    c.first_member = static_cast<uint32_t>(run.members.size());
    c.n_members = static_cast<uint32_t>(gpu.size());
    for (size_t r = 0; r < gpu.size(); ++r) run.members.push_back(member(run.comms[comm].processes[r], static_cast<int>(r), gpu[r], stream));
    run.collectives.push_back(c);
    return run.collectives.back();
  }

  report::P2pTransfer& addTransfer(uint32_t comm, int send_rank, int recv_rank, uint64_t bytes, Gpu send, Gpu recv,
                                   uint64_t stream = 0x7f00) {
    report::P2pTransfer t;
    t.comm = comm;
    t.func = run.names.intern("Send");
    t.datatype = run.names.intern("ncclInt8");
    t.bytes = t.count = bytes;
    t.n_channels = 1;
    t.op_index = next_op_index_[comm]++;
    const std::vector<int>& procs = run.comms[comm].processes;
    t.send = member(procs[send_rank], send_rank, send, stream);
    t.recv = member(procs[recv_rank], recv_rank, recv, stream);
    run.transfers.push_back(t);
    return run.transfers.back();
  }

  report::RunModel run;

 private:
  report::MemberView member(int process, int comm_rank, Gpu gpu, uint64_t stream) {
    report::MemberView m;
    m.process = process;
    m.comm_rank = comm_rank;
    if (process < 0) return m;  // no file holds this rank
    m.cpu_start_ns = 1'000'000 + 1000 * ++issued_[process];
    m.cpu_end_ns = m.cpu_start_ns + 500;
    std::tie(m.gpu_start_ns, m.gpu_end_ns) = gpu;
    m.stream = stream;
    if (gpu.first != 0) {
      report::ProcessInfo& p = run.processes[process];
      p.first_gpu_ns = p.first_gpu_ns == 0 ? gpu.first : std::min(p.first_gpu_ns, gpu.first);
      p.last_gpu_ns = std::max(p.last_gpu_ns, gpu.second);
    }
    return m;
  }

  std::vector<uint64_t> issued_;  // per process: ops issued so far
  std::map<uint32_t, uint64_t> next_op_index_;
};

}  // namespace commtrace::testutil
