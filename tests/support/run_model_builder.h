// Hand-built RunModels for the unit tests of what reads one (analyses, Perfetto export):
// one process per global rank, named communicators, and ops given by each member's GPU
// span, as the loader would join them. Like the loader, the builder also fills each
// member's CPU issue time (counting up per process in the order ops are added), its
// stream, and each process's first and last GPU time.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "tools/report/load/run_model.h"

namespace commtrace::testutil {

// One member's GPU span on its own clock. recorded = false: that rank never recorded the op
// (process -1); {0, 0}: recorded without GPU times.
struct Span {
  uint64_t start = 0;
  uint64_t end = 0;
  bool recorded = true;
};
inline constexpr Span kNotRecorded{0, 0, false};

class RunModelBuilder {
 public:
  // Global rank r lives on hosts[r]; its file is process r.
  explicit RunModelBuilder(const std::vector<std::string>& hosts) {
    for (size_t r = 0; r < hosts.size(); ++r) {
      report::ProcessInfo p;
      p.path = "rank" + std::to_string(r) + ".ctrace";
      p.host = hosts[r];
      p.rank = static_cast<int>(r);
      run.processes.push_back(p);
    }
    run.timelines.resize(hosts.size());
    run.world_size = static_cast<int>(hosts.size());
  }

  uint32_t comm(const std::vector<int>& ranks, const std::string& name) {
    report::Communicator c;
    c.id = 0x1000 + run.comms.size();
    c.name = run.names.intern(name);
    c.size = static_cast<int>(ranks.size());
    c.global_ranks = ranks;
    c.processes = ranks;
    run.comms.push_back(c);
    return static_cast<uint32_t>(run.comms.size() - 1);
  }

  // A collective of comm; spans in comm-rank order. seq and op_index count per comm.
  report::CollInstance& coll(uint32_t comm, const std::string& func, uint64_t bytes, const std::vector<Span>& spans,
                             const std::string& algo = "RING", const std::string& proto = "SIMPLE", int root = 0) {
    report::CollInstance c;
    c.comm = comm;
    c.func = run.names.intern(func);
    c.algo = run.names.intern(algo);
    c.proto = run.names.intern(proto);
    c.datatype = run.names.intern("ncclFloat32");
    c.bytes = bytes;
    c.count = bytes / 4;
    c.n_channels = 2;
    c.root = root;
    c.op_index = c.seq = next_op_index(comm);
    c.first_member = static_cast<uint32_t>(run.members.size());
    c.n_members = static_cast<uint32_t>(spans.size());
    for (size_t r = 0; r < spans.size(); ++r) run.members.push_back(member(comm, static_cast<int>(r), spans[r]));
    run.collectives.push_back(c);
    return run.collectives.back();
  }

  report::P2pTransfer& p2p(uint32_t comm, const std::string& func, int src, int dst, uint64_t bytes, Span send, Span recv,
                           uint64_t op_index = 0) {
    report::P2pTransfer t;
    t.comm = comm;
    t.comm_size = run.comms[comm].size;
    t.func = run.names.intern(func);
    t.datatype = run.names.intern("ncclInt8");
    t.bytes = t.count = bytes;
    t.n_channels = 1;
    t.op_index = op_index;
    t.send = member(comm, src, send);
    t.recv = member(comm, dst, recv);
    run.transfers.push_back(t);
    return run.transfers.back();
  }

  // One AlltoAll call as NCCL records it: a piece per ordered pair of comm ranks, each side
  // issued on its rank in the order added; every piece of comm rank r spans spans[r].
  void alltoall(uint32_t comm, uint64_t bytes_per_peer, const std::vector<Span>& spans) {
    for (size_t a = 0; a < spans.size(); ++a)
      for (size_t b = 0; b < spans.size(); ++b)
        if (a != b) p2p(comm, "AlltoAll", static_cast<int>(a), static_cast<int>(b), bytes_per_peer, spans[a], spans[b]);
  }

  report::RunModel run;

 private:
  static constexpr uint64_t kStream = 0x7f00;

  report::MemberView member(uint32_t comm, int comm_rank, Span s) {
    report::MemberView m;
    m.comm_rank = comm_rank;
    m.process = s.recorded ? run.comms[comm].processes[comm_rank] : -1;
    if (m.process < 0) return m;
    m.cpu_start_ns = 1'000'000 + 1000 * nextIssue(m.process);
    m.cpu_end_ns = m.cpu_start_ns + 500;
    m.gpu_start_ns = s.start;
    m.gpu_end_ns = s.end;
    m.stream = kStream;
    if (s.start != 0) {
      report::ProcessInfo& p = run.processes[m.process];
      p.first_gpu_ns = p.first_gpu_ns == 0 ? s.start : std::min(p.first_gpu_ns, s.start);
      p.last_gpu_ns = std::max(p.last_gpu_ns, s.end);
    }
    return m;
  }
  uint64_t nextIssue(int process) {
    if (issued_.size() <= static_cast<size_t>(process)) issued_.resize(process + 1, 0);
    return ++issued_[process];
  }
  uint64_t next_op_index(uint32_t comm) {
    if (op_index_.size() <= comm) op_index_.resize(comm + 1, 0);
    return op_index_[comm]++;
  }
  std::vector<uint64_t> op_index_;
  std::vector<uint64_t> issued_;  // per process: ops issued so far
};

}  // namespace commtrace::testutil
