// Perfetto's own trace format (a protobuf Trace of TracePackets), the export's default:
// written as it goes, opened by ui.perfetto.dev and trace_processor. A process per rank
// with a child track per stream; each slice a BEGIN and an END TrackEvent with its args as
// debug annotations; the ranks' slices of one collective share a flow id, which the UI draws
// as arrows from the first rank to arrive to the last. Each process writes on its own packet
// sequence, in time order, and interns what repeats there (event names, categories, arg
// names, string values) so that each is spelt once per sequence. The field numbers are
// Perfetto's public ones (protos/perfetto/trace/...), declared here from its documentation.
#pragma once

#include <memory>
#include <ostream>

#include "tools/report/output/trace_format.h"

namespace commtrace::report {

std::unique_ptr<TraceFormat> makeProtoTraceFormat(std::ostream& out);

// The field numbers written, as Perfetto's trace protos define them.
namespace perfetto_field {
inline constexpr uint32_t kTracePacket = 1;  // Trace.packet

inline constexpr uint32_t kTimestamp = 8;  // TracePacket
inline constexpr uint32_t kSequenceId = 10;  // trusted_packet_sequence_id
inline constexpr uint32_t kTrackEvent = 11;
inline constexpr uint32_t kInternedData = 12;
inline constexpr uint32_t kSequenceFlags = 13;
inline constexpr uint32_t kTrackDescriptor = 60;
inline constexpr uint32_t kSeqIncrementalStateCleared = 1;  // sequence_flags values
inline constexpr uint32_t kSeqNeedsIncrementalState = 2;

inline constexpr uint32_t kInternedCategories = 1;  // InternedData
inline constexpr uint32_t kInternedEventNames = 2;
inline constexpr uint32_t kInternedAnnotationNames = 3;
inline constexpr uint32_t kInternedStringValues = 29;
inline constexpr uint32_t kInternedIid = 1;  // each entry: EventCategory, EventName, DebugAnnotationName,
inline constexpr uint32_t kInternedName = 2;  // InternedString (its bytes str)

inline constexpr uint32_t kTrackUuid = 1;  // TrackDescriptor
inline constexpr uint32_t kTrackName = 2;
inline constexpr uint32_t kTrackProcess = 3;
inline constexpr uint32_t kTrackParentUuid = 5;
inline constexpr uint32_t kTrackSiblingOrderRank = 12;

inline constexpr uint32_t kProcessPid = 1;  // ProcessDescriptor
inline constexpr uint32_t kProcessName = 6;

inline constexpr uint32_t kEventCategoryIids = 3;  // TrackEvent
inline constexpr uint32_t kEventDebugAnnotations = 4;
inline constexpr uint32_t kEventType = 9;
inline constexpr uint32_t kEventNameIid = 10;
inline constexpr uint32_t kEventTrackUuid = 11;
inline constexpr uint32_t kEventCategories = 22;
inline constexpr uint32_t kEventName = 23;
inline constexpr uint32_t kEventFlowIds = 47;  // fixed64
inline constexpr uint32_t kSliceBegin = 1, kSliceEnd = 2, kInstant = 3;  // TrackEvent.Type

inline constexpr uint32_t kAnnotationNameIid = 1;  // DebugAnnotation
inline constexpr uint32_t kAnnotationUint = 3;
inline constexpr uint32_t kAnnotationInt = 4;
inline constexpr uint32_t kAnnotationDouble = 5;
inline constexpr uint32_t kAnnotationString = 6;
inline constexpr uint32_t kAnnotationName = 10;
inline constexpr uint32_t kAnnotationStringIid = 17;
}  // namespace perfetto_field

}  // namespace commtrace::report
