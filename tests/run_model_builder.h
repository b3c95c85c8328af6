// Hand-built RunModels for the analyses' unit tests: one process per global rank, named
// communicators, and ops given by each member's GPU span, as the loader would join them.
#pragma once

#include <string>
#include <vector>

#include "tools/report/run_model.h"

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
    c.bytes = bytes;
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
    t.func = run.names.intern(func);
    t.bytes = bytes;
    t.op_index = op_index;
    t.send = member(comm, src, send);
    t.recv = member(comm, dst, recv);
    run.transfers.push_back(t);
    return run.transfers.back();
  }

  report::RunModel run;

 private:
  report::MemberView member(uint32_t comm, int comm_rank, Span s) const {
    report::MemberView m;
    m.comm_rank = comm_rank;
    m.process = s.recorded ? run.comms[comm].processes[comm_rank] : -1;
    m.gpu_start_ns = s.start;
    m.gpu_end_ns = s.end;
    if (s.recorded) m.cpu_start_ns = 1;
    return m;
  }
  uint64_t next_op_index(uint32_t comm) {
    if (op_index_.size() <= comm) op_index_.resize(comm + 1, 0);
    return op_index_[comm]++;
  }
  std::vector<uint64_t> op_index_;
};

}  // namespace commtrace::testutil
