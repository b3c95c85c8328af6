#include "tools/report/output/report_sections.h"

#include "tools/report/output/json_report.h"
#include "tools/report/output/page_parts.h"

namespace commtrace::report {
namespace {

using json::Json;
using json::PrettyObject;

using PagePart = std::function<void(const Report&, Page&)>;

// A section that is one table on the pages: its rows as their declaration shows them.
struct TablePage {
  std::string_view id;
  std::string title, about;
  Rows rows;
  std::string when_empty;
};

template <class Row, class Get>
PagePart tablePage(const rows::Fields<Row>& fields, Get get, TablePage spec) {
  return [&fields, get, spec](const Report& r, Page& page) {
    page.section(spec.id, spec.title, spec.about);
    page.table(rows::peopleTable(fields, get(r)), spec.rows, spec.when_empty);
  };
}

// A list of rows: a JSON array, a CSV table and SCHEMA.md's field table, each row as its
// declaration says; on the pages as `page` shows it.
template <class Row, class Get>
ReportSection rowSection(std::string_view key, std::string_view meaning, std::string csv_file, const rows::Fields<Row>& fields, Get get,
                         PagePart page = {}) {
  return {key, "[object]", meaning,
          [key, &fields, get](PrettyObject& doc, const Report& r) {
            doc.array(key, get(r), [&fields](const Row& row) { return json::rowJson(fields, row); });
          },
          [csv_file, &fields, get](const Report& r, const CsvOut& out) { out(csv::rowsTable(csv_file, fields, get(r))); },
          std::move(page), [&fields] { return rows::markdownTable(fields); }};
}

template <class Row, class Get>
ReportSection rowSection(std::string_view key, std::string_view meaning, std::string csv_file, const rows::Fields<Row>& fields, Get get,
                         TablePage page) {
  return rowSection(key, meaning, std::move(csv_file), fields, get, tablePage(fields, get, std::move(page)));
}

// A JSON field alone.
template <class Value>
ReportSection jsonField(std::string_view key, std::string_view type, std::string_view meaning, Value value, PagePart page = {}) {
  return {key, type, meaning, [key, value](PrettyObject& doc, const Report& r) { doc.field(key, value(r)); }, {}, std::move(page)};
}

std::vector<ReportSection> declareSections() {
  return {
      jsonField("schema", "string", "`\"commtrace.report.v1\"`", [](const Report&) { return Json(kReportSchema); }),
      jsonField("generator", "string", "`\"commtrace <version>\"`", [](const Report&) { return Json(std::string("commtrace ") + COMMTRACE_VERSION); }),
      jsonField("findings", "[string]", "the top findings, most important first, one sentence each", [](const Report& r) { return Json(r.findings); }, pages::findings),
      rowSection("finding_details", "the same findings in the same order, each with its fields (below)", "findings.csv", rows::findingFields(), [](const Report& r) -> const auto& { return r.finding_details; }),
      rowSection("advice", "what to try, each with the numbers behind it (below)", "advice.csv", rows::adviceFields(), [](const Report& r) -> const auto& { return r.advice; }, pages::advice),
      {"run", "object", "what was read (below)", [](PrettyObject& doc, const Report& r) { doc.field("run", json::runJson(r.run)); },
       [](const Report& r, const CsvOut& out) {
         out(csv::runTable(r.run));
         out(csv::linesTable("problems.csv", "problem", r.run.problems));
       }, pages::run},
      rowSection("communicators", "every communicator (below)", "communicators.csv", rows::communicatorFields(), [](const Report& r) -> const auto& { return r.communicators; }, pages::communicators),
      rowSection("parallelism", "the workload's parallelism, one row per shape of communicator (below)", "parallelism.csv", rows::parallelismFields(), [](const Report& r) -> const auto& { return r.parallelism; },
                 TablePage{"parallelism", "Parallelism", "recognised from the communicators and their ops", Rows::kInventory, "no communicator ran an op"}),
      rowSection("bandwidth", "the bandwidth table (below)", "bandwidth.csv", rows::bandwidthFields(), [](const Report& r) -> const auto& { return r.bandwidth; }, pages::bandwidth),
      {"bandwidth_series", "object", "busBw over time per communicator and func (below)",
       [](PrettyObject& doc, const Report& r) {
         doc.object("bandwidth_series", [&](PrettyObject& s) {
           const bool aligned = !r.bandwidth_series.rows.empty();
           s.field("axis", r.bandwidth_series.axis);
           s.field("start_us", json::orNull(aligned, r.bandwidth_series.start_us));
           s.field("bin_us", json::orNull(aligned, r.bandwidth_series.bin_us));
           s.array("series", r.bandwidth_series.rows, json::bandwidthSeriesRowJson);
         });
       },
       [](const Report& r, const CsvOut& out) { out(csv::bandwidthSeriesTable(r.bandwidth_series)); }, pages::bandwidthSeries},
      rowSection("stragglers", "per rank, sorted by `wait_caused_us` descending (below)", "stragglers.csv", rows::stragglerFields(), [](const Report& r) -> const auto& { return r.stragglers.ranks; }, pages::stragglers),
      rowSection("straggler_hosts", "the same per host", "straggler_hosts.csv", rows::hostStragglerFields(),
                 [](const Report& r) -> const auto& { return r.stragglers.hosts; }, pages::stragglerHosts),
      rowSection("straggler_comms", "the same per communicator", "straggler_comms.csv", rows::commStragglerFields(),
                 [](const Report& r) -> const auto& { return r.stragglers.comms; }, pages::stragglerComms),
      rowSection("links", "rank pairs, slowest relative to links of their kind first", "links.csv", rows::linkFields(), [](const Report& r) -> const auto& { return r.stragglers.links; }, pages::links),
      {"lateness_heatmap", "object", "lateness per rank over time", [](PrettyObject& doc, const Report& r) { doc.field("lateness_heatmap", json::heatmapJson(r.stragglers.heatmap)); },
       [](const Report& r, const CsvOut& out) { out(csv::heatmapTable(r.stragglers.heatmap)); }, pages::lateness},
      {"matrix", "object", "the communication matrix (below)",
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
           m.array("slices", json::keptSlices(r.matrix), [&](const MatrixSlice* s) { return json::matrixSliceJson(*s, json::keptCells(r.matrix)); });
           m.field("slices_total", Json(r.matrix.slices.size()));
         });
       },
       [](const Report& r, const CsvOut& out) {
         out(csv::gridTable("matrix_bytes.csv", r.matrix.bytes));
         out(csv::gridTable("matrix_p2p_bytes.csv", r.matrix.p2p_bytes));
         out(csv::gridTable("matrix_time_us.csv", r.matrix.time_us));
         out(csv::partsTable("matrix_cells.csv", rows::matrixSliceFields(), rows::matrixCellFields(), r.matrix.slices,
                             [](const MatrixSlice& s) -> const auto& { return s.cells; }));
       }, pages::matrix},
      rowSection("rank_traffic", "what each rank moved, most bytes first (below)", "rank_traffic.csv",
                 rows::rankTrafficFields(), [](const Report& r) -> const auto& { return r.rank_traffic; },
                 TablePage{"rank-traffic", "Traffic per rank", "most bytes first; an uneven share stands far from 1x the median rank's",
                           Rows::kInventory, "no rank recorded a collective or a transfer"}),
      rowSection("mismatches", "instances some ranks issued and others did not, or never finished", "mismatches.csv", rows::mismatchFields(), [](const Report& r) -> const auto& { return r.mismatches; }, pages::mismatches),
      jsonField("mismatches_total", "integer", "all mismatches found; `mismatches` may list fewer", [](const Report& r) { return Json(r.mismatches_total); }),
      {"overlap", "[object]", "per process: communication hidden behind compute (below)", [](PrettyObject& doc, const Report& r) {
         const std::vector<bool> with_steps = json::overlapWithSteps(r.overlap);
         doc.array("overlap", r.overlap, [&](const OverlapRow& o) { return json::overlapRowJson(o, with_steps[static_cast<size_t>(&o - r.overlap.data())]); });
       },
       [](const Report& r, const CsvOut& out) {
         out(csv::rowsTable("overlap.csv", rows::overlapFields(), r.overlap));
         out(csv::partsTable("overlap_steps.csv", rows::pick(rows::overlapFields(), {"rank"}), rows::overlapStepFields(), r.overlap, csv::stepsOf));
       }, pages::overlap},
      rowSection("peer_waits", "point-to-point waits between ranks (pipeline bubbles), most wait first (below)", "peer_waits.csv", rows::peerWaitFields(), [](const Report& r) -> const auto& { return r.peer_waits; },
                 TablePage{"peer-waits", "Point-to-point waits", "pipeline bubbles: who waited for whom in sends and receives", Rows::kRanking,
                           "no send or receive waited for its peer"}),
      {"kernels", "object", "GPU activity by name and by kernel type (below)", [](PrettyObject& doc, const Report& r) { doc.field("kernels", json::kernelsJson(r.kernels)); },
       [](const Report& r, const CsvOut& out) {
         std::vector<KernelRow> top_then_per_rank = r.kernels.top;
         top_then_per_rank.insert(top_then_per_rank.end(), r.kernels.per_rank.begin(), r.kernels.per_rank.end());
         out(csv::rowsTable("kernels.csv", rows::kernelFields(), top_then_per_rank));
         out(csv::rowsTable("kernels_by_count.csv", rows::kernelFields(), r.kernels.per_rank_by_count));
         out(csv::rowsTable("kernel_types.csv", rows::kernelTypeFields(), r.kernels.types));
       }, pages::kernels},
      rowSection("call_paths", "communication by the NVTX path it was issued under, most time first (below)", "call_paths.csv",
                 rows::callPathFields(), [](const Report& r) -> const auto& { return r.call_paths; },
                 pages::callPaths),
      rowSection("call_stacks", "sampled ops by the native call stack they were issued from, most ops first (below)", "call_stacks.csv",
                 rows::callStackFields(), [](const Report& r) -> const auto& { return r.call_stacks; }, pages::callStacks),
      jsonField("call_stack_notes", "[string]", "why some frames are not named: modules the report could not read on this machine, Python processes without a perf map",
                [](const Report& r) { return Json(r.call_stack_notes); }),
      {"cuda_sync", "[object]", "per process: CPU time inside CUDA synchronisation calls (below)", [](PrettyObject& doc, const Report& r) { doc.array("cuda_sync", r.cuda_sync, json::cudaSyncRowJson); },
       [](const Report& r, const CsvOut& out) {
         out(csv::partsTable("cuda_sync.csv", rows::pick(rows::cudaSyncFields(), {"rank", "host"}), rows::cudaSyncCallFields(), r.cuda_sync,
                             [](const CudaSyncRow& p) -> const auto& { return p.calls; }));
         out(csv::cudaSyncStreamsTable(r.cuda_sync));
       }, pages::cudaSync},
      {"clocks", "object", "clock alignment (below)", [](PrettyObject& doc, const Report& r) { doc.field("clocks", json::clocksJson(r.clocks)); },
       [](const Report& r, const CsvOut& out) { out(csv::rowsTable("clocks.csv", rows::clockFitFields(), r.clocks.fits)); }, pages::clocks},
      jsonField("collectives_lost_to_drops", "integer", "collective instances missing a member whose process dropped records (lost by the tracer, not skipped by the rank)", [](const Report& r) { return Json(r.collectives_lost_to_drops); }),
  };
}

}  // namespace

const std::vector<ReportSection>& reportSections() {
  static const std::vector<ReportSection> sections = declareSections();
  return sections;
}

void writePage(const Report& r, Page& page) {
  for (const ReportSection& section : reportSections())
    if (section.page) section.page(r, page);
}

}  // namespace commtrace::report
