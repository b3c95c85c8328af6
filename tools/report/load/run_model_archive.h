// The RunModel's parts as a shard's state carries them (tools/report/shard/): plain
// structs, so their fields are listed here rather than beside them. Names travel as ids of
// the shard's pool (archived_name.h). A field added to run_model.h is added here too, or a
// merged report goes without it (shard_state_test compares merged reports with whole ones).
#pragma once

#include <cereal/types/common.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/unordered_map.hpp>
#include <cereal/types/utility.hpp>
#include <cereal/types/vector.hpp>

#include "tools/report/load/archived_name.h"
#include "tools/report/load/run_model.h"

namespace commtrace::report {

template <class Archive>
void serialize(Archive& ar, LinearMap& m) {
  ar(m.slope, m.intercept, m.valid);
}

template <class Archive>
void serialize(Archive& ar, ProcessInfo& p) {
  ar(p.path, p.file_bytes, p.host, p.pid, p.rank, p.local_rank, p.world_size, p.job_id, p.restart_count, p.records,
     p.dropped_records, p.untracked_events, p.damaged, p.issues, p.file_state, p.exit_unseen, p.modified_utc_ns,
     p.flush_period_ms, p.heartbeat_utc_ns, p.torn_tail, p.gpu_from_cpu, p.gpu_from_cupti, p.cupti_match.nccl_kernels,
     p.cupti_match.matched, p.cupti_match.residual_rms_ns, p.start_utc_ns, p.utc_minus_cpu_ns, p.first_op_utc_ns,
     p.last_op_utc_ns, p.first_gpu_ns, p.last_gpu_ns);
}

template <class Archive>
void serialize(Archive& ar, Communicator& c) {
  ar(c.id, archived(c.name), c.size, c.n_nodes, c.restart_count, c.global_ranks, c.processes, c.one_rank_view);
}

template <class Archive>
void serialize(Archive& ar, MemberView& m) {
  ar(m.process, m.comm_rank, m.cpu_start_ns, m.cpu_end_ns, m.gpu_start_ns, m.gpu_end_ns, m.stream, m.gpu_gap_ns);
}

template <class Archive>
void serialize(Archive& ar, P2pTransfer& t) {
  ar(t.comm, archived(t.func), archived(t.datatype), archived(t.send_path), t.op_index, t.count, t.bytes, t.n_channels,
     archived(t.recv_path), t.comm_size, t.send, t.recv);
}

template <class Archive>
void serialize(Archive& ar, KernelTally& k) {
  ar(archived(k.name), k.activity, k.count, k.total_ns, k.max_ns);
}

template <class Archive>
void serialize(Archive& ar, GpuInterval& g) {
  ar(g.start_ns, g.end_ns, archived(g.name), g.stream);
}

template <class Archive>
void serialize(Archive& ar, PhaseSpan& s) {
  ar(archived(s.name), s.cpu_start_ns, s.cpu_end_ns, s.depth);
}

template <class Archive>
void serialize(Archive& ar, PathComm& c) {
  ar(archived(c.path), c.ops, c.bytes, c.gpu_ns, c.call_pieces);
}

template <class Archive>
void serialize(Archive& ar, NativeFrame& f) {
  ar(archived(f.module), archived(f.build_id), f.address, archived(f.symbol));
}

template <class Archive>
void serialize(Archive& ar, StackComm& s) {
  ar(s.frames, s.samples, s.ops, s.bytes, s.api_ns);
}

template <class Archive>
void serialize(Archive& ar, ProcessTimeline& t) {
  ar(t.kernels, t.compute, t.phases, t.cuda_sync, t.proxy_wire, t.comm_by_path);
  archiveEntries(ar, t.path_names, [](Archive& a, uint32_t& id, NameId& name) { a(id, archived(name)); });
  ar(t.comm_by_stack, t.python_without_perf_map, t.has_kernel_records, t.unmapped_kernels);
}

template <class Archive>
void serialize(Archive& ar, TimeWindow& w) {
  ar(w.from_utc_ns, w.to_utc_ns, w.from_step, w.to_step, w.step_rank, w.step_period, w.step_range, w.shard, w.shards);
}

// Everything but the names (the state writes its pool first) and the ops a report does not
// keep (RunModel::ops_kept: a shard's collectives are in its analyses' states).
template <class Archive>
void serialize(Archive& ar, RunModel& run) {
  ar(run.dir, run.read_utc_ns, run.last_close_utc_ns, run.processes, run.timelines, run.comms, run.ops_kept, run.transfers,
     run.skipped_files, run.missing_ranks, run.world_size, run.window, run.ops_outside_window);
}

}  // namespace commtrace::report
