// What a scenario planted, written once per run as DIR/ground-truth.json so tests (and the
// demo) can check what the tracer recorded against it. Identities match what the plugin
// records: comm_id is the commId handed to init, seq NCCL's per-func seqNumber, op_index
// the per-communicator (collectives) or per-(comm, peer, func) (p2p) counter.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "tools/nccl-driver/ground_truth_file.h"
#include "tools/nccl-driver/timing_model.h"

namespace commtrace::driver {

// The ground truth as JSON, written as it is made: the run's collectives and transfers one at a time.
void writeGroundTruth(const Scenario& scenario, const Timeline& timeline, std::ostream& out);
// The same, parsed (for tests of small scenarios).
nlohmann::ordered_json groundTruthJson(const Scenario& scenario, const Timeline& timeline);

// Writes DIR/ground-truth.json; false with a "commtrace:" message in error.
bool writeGroundTruth(const Scenario& scenario, const Timeline& timeline, const std::string& dir, std::string& error);

}  // namespace commtrace::driver
