#include "tools/report/output/report_sections.h"

#include "tools/report/output/json_report.h"

namespace commtrace::report {
namespace {

using json::Json;
using json::PrettyObject;

// A list of rows: a JSON array and a CSV table, each row as its declaration says.
template <class Row, class Get>
ReportSection rowSection(std::string_view key, std::string csv_file, const rows::Fields<Row>& fields, Get get) {
  return {key,
          [key, &fields, get](PrettyObject& doc, const Report& r) {
            doc.array(key, get(r), [&fields](const Row& row) { return json::rowJson(fields, row); });
          },
          [csv_file, &fields, get](const Report& r, const CsvOut& out) { out(csv::rowsTable(csv_file, fields, get(r))); }};
}

// A JSON field alone.
template <class Value>
ReportSection jsonField(std::string_view key, Value value) {
  return {key, [key, value](PrettyObject& doc, const Report& r) { doc.field(key, value(r)); }, {}};
}

std::vector<ReportSection> declareSections() {
  return {
      jsonField("schema", [](const Report&) { return Json(kReportSchema); }),
      jsonField("generator", [](const Report&) { return Json(std::string("commtrace ") + COMMTRACE_VERSION); }),
      {"run", [](PrettyObject& doc, const Report& r) { doc.field("run", json::runJson(r.run)); },
       [](const Report& r, const CsvOut& out) {
         out(csv::runTable(r.run));
         out(csv::linesTable("problems.csv", "problem", r.run.problems));
       }},
      jsonField("findings", [](const Report& r) { return Json(r.findings); }),
      rowSection("finding_details", "findings.csv", rows::findingFields(), [](const Report& r) -> const auto& { return r.finding_details; }),
      rowSection("advice", "advice.csv", rows::adviceFields(), [](const Report& r) -> const auto& { return r.advice; }),
      {"clocks", [](PrettyObject& doc, const Report& r) { doc.field("clocks", json::clocksJson(r.clocks)); },
       [](const Report& r, const CsvOut& out) { out(csv::rowsTable("clocks.csv", rows::clockFitFields(), r.clocks.fits)); }},
      rowSection("communicators", "communicators.csv", rows::communicatorFields(), [](const Report& r) -> const auto& { return r.communicators; }),
      rowSection("parallelism", "parallelism.csv", rows::parallelismFields(), [](const Report& r) -> const auto& { return r.parallelism; }),
      rowSection("bandwidth", "bandwidth.csv", rows::bandwidthFields(), [](const Report& r) -> const auto& { return r.bandwidth; }),
      {"bandwidth_series",
       [](PrettyObject& doc, const Report& r) {
         doc.object("bandwidth_series", [&](PrettyObject& s) {
           const bool aligned = !r.bandwidth_series.rows.empty();
           s.field("axis", r.bandwidth_series.axis);
           s.field("start_us", json::orNull(aligned, r.bandwidth_series.start_us));
           s.field("bin_us", json::orNull(aligned, r.bandwidth_series.bin_us));
           s.array("series", r.bandwidth_series.rows, json::bandwidthSeriesRowJson);
         });
       },
       [](const Report& r, const CsvOut& out) { out(csv::bandwidthSeriesTable(r.bandwidth_series)); }},
      {"matrix",
       [](PrettyObject& doc, const Report& r) {
         doc.object("matrix", [&](PrettyObject& m) {
           const auto self = [](const auto& value) { return Json(value); };
           m.field("ranks", r.matrix.ranks);
           if (r.matrix.dense) {
             m.array("bytes", r.matrix.bytes, self);
             m.array("p2p_bytes", r.matrix.p2p_bytes, self);
             m.array("time_us", r.matrix.time_us, self);
           } else {
             for (const char* grid : {"bytes", "p2p_bytes", "time_us"}) m.field(grid, Json(nullptr));
           }
           m.field("model", r.matrix.model);
           m.array("slices", r.matrix.slices, json::matrixSliceJson);
         });
       },
       [](const Report& r, const CsvOut& out) {
         out(csv::gridTable("matrix_bytes.csv", r.matrix.bytes));
         out(csv::gridTable("matrix_p2p_bytes.csv", r.matrix.p2p_bytes));
         out(csv::gridTable("matrix_time_us.csv", r.matrix.time_us));
         out(csv::partsTable("matrix_cells.csv", rows::matrixSliceFields(), rows::matrixCellFields(), r.matrix.slices,
                             [](const MatrixSlice& s) -> const auto& { return s.cells; }));
       }},
      {"overlap", [](PrettyObject& doc, const Report& r) { doc.array("overlap", r.overlap, json::overlapRowJson); },
       [](const Report& r, const CsvOut& out) {
         out(csv::rowsTable("overlap.csv", rows::overlapFields(), r.overlap));
         out(csv::partsTable("overlap_steps.csv", rows::pick(rows::overlapFields(), {"rank"}), rows::overlapStepFields(), r.overlap, csv::stepsOf));
       }},
      rowSection("peer_waits", "peer_waits.csv", rows::peerWaitFields(), [](const Report& r) -> const auto& { return r.peer_waits; }),
      {"kernels", [](PrettyObject& doc, const Report& r) { doc.field("kernels", json::kernelsJson(r.kernels)); },
       [](const Report& r, const CsvOut& out) {
         std::vector<KernelRow> top_then_per_rank = r.kernels.top;
         top_then_per_rank.insert(top_then_per_rank.end(), r.kernels.per_rank.begin(), r.kernels.per_rank.end());
         out(csv::rowsTable("kernels.csv", rows::kernelFields(), top_then_per_rank));
         out(csv::rowsTable("kernels_by_count.csv", rows::kernelFields(), r.kernels.per_rank_by_count));
         out(csv::rowsTable("kernel_types.csv", rows::kernelTypeFields(), r.kernels.types));
       }},
      {"cuda_sync", [](PrettyObject& doc, const Report& r) { doc.array("cuda_sync", r.cuda_sync, json::cudaSyncRowJson); },
       [](const Report& r, const CsvOut& out) {
         out(csv::partsTable("cuda_sync.csv", rows::pick(rows::cudaSyncFields(), {"rank", "host"}), rows::cudaSyncCallFields(), r.cuda_sync,
                             [](const CudaSyncRow& p) -> const auto& { return p.calls; }));
         out(csv::cudaSyncStreamsTable(r.cuda_sync));
       }},
      rowSection("stragglers", "stragglers.csv", rows::stragglerFields(), [](const Report& r) -> const auto& { return r.stragglers.ranks; }),
      rowSection("straggler_hosts", "straggler_hosts.csv", rows::hostStragglerFields(),
                 [](const Report& r) -> const auto& { return r.stragglers.hosts; }),
      rowSection("straggler_comms", "straggler_comms.csv", rows::commStragglerFields(),
                 [](const Report& r) -> const auto& { return r.stragglers.comms; }),
      rowSection("links", "links.csv", rows::linkFields(), [](const Report& r) -> const auto& { return r.stragglers.links; }),
      {"lateness_heatmap", [](PrettyObject& doc, const Report& r) { doc.field("lateness_heatmap", json::heatmapJson(r.stragglers.heatmap)); },
       [](const Report& r, const CsvOut& out) { out(csv::heatmapTable(r.stragglers.heatmap)); }},
      rowSection("mismatches", "mismatches.csv", rows::mismatchFields(), [](const Report& r) -> const auto& { return r.mismatches; }),
      jsonField("mismatches_total", [](const Report& r) { return Json(r.mismatches_total); }),
      jsonField("collectives_lost_to_drops", [](const Report& r) { return Json(r.collectives_lost_to_drops); }),
  };
}

}  // namespace

const std::vector<ReportSection>& reportSections() {
  static const std::vector<ReportSection> sections = declareSections();
  return sections;
}

}  // namespace commtrace::report
