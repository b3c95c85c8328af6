// What each section of the report shows people (page.h) where it is more than one table
// (report_sections.cc declares those as a TablePage): its title, its tables, the notes under
// them and its charts, written once for every page. The registry says which section each
// belongs to and in what order.
#pragma once

#include "tools/report/output/page.h"
#include "tools/report/report.h"

namespace commtrace::report::pages {

void findings(const Report& r, Page& page);
void advice(const Report& r, Page& page);
void run(const Report& r, Page& page);
void communicators(const Report& r, Page& page);
void bandwidth(const Report& r, Page& page);  // the table, then the plots by message size
void bandwidthSeries(const Report& r, Page& page);
void stragglers(const Report& r, Page& page);
void stragglerHosts(const Report& r, Page& page);
void stragglerComms(const Report& r, Page& page);
void links(const Report& r, Page& page);
void lateness(const Report& r, Page& page);
void matrix(const Report& r, Page& page);
void mismatches(const Report& r, Page& page);
void overlap(const Report& r, Page& page);
void kernels(const Report& r, Page& page);
void cudaSync(const Report& r, Page& page);
void callPaths(const Report& r, Page& page);  // nothing where no op ran under an NVTX range
void callStacks(const Report& r, Page& page);  // nothing where no call stack was sampled
void clocks(const Report& r, Page& page);

}  // namespace commtrace::report::pages
