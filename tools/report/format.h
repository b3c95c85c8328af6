// How the report spells numbers, sizes, durations and rank lists for people: the analyses'
// evidence sentences, the findings and the text and HTML tables all say the same thing the
// same way. JSON and CSV print raw numbers instead.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace commtrace::report::fmt {

std::string hexId(uint64_t id);                // "0x1a2b..." (communicator ids)
// A communicator as people read it: its name, else its hex id (PyTorch names none).
std::string commLabel(uint64_t id, std::string_view name);
std::string fixed(double value, int decimals);  // "12.35"
std::string count(double n);                    // a count per step: "48", "2.5" (whole from 10, or when whole; else to a tenth)
std::string bytes(uint64_t n);                  // "512 B", "4 KiB", "1.5 MiB"
std::string duration(double us);                // "830 ns", "12.4 us", "3.21 ms", "1.50 s"
std::string percent(double fraction);           // 0.125 -> "12.5%"
std::string bandwidth(double gbs);              // "23.41"; "<0.01" for less, above 0 (not "0.00")
std::string gbs(double gbs);                    // bandwidth + " GB/s"
// "1 host", "2 hosts"; plural: when not noun + "s" ("processes").
std::string counted(uint64_t n, const std::string& noun, const std::string& plural = "");
// Ascending runs collapse: {0,1,2,3,6} -> "0-3,6"; -1 (unknown) prints "?".
std::string rankList(const std::vector<int>& ranks);
// Whose processes, sorted ranks with -1 for unknown first: "rank(s) 3,7", "20 processes of no
// known rank", "rank(s) 3 and 1 process of no known rank".
std::string processesOf(const std::vector<int>& ranks);
// CLOCK_REALTIME ns as UTC: "2026-11-27 06:31:02.123 UTC" (people), or ISO 8601 to the
// microsecond, "2026-11-27T06:31:02.123456Z" (JSON and CSV: a JSON number would lose the
// nanoseconds of a 64-bit time).
std::string utcTime(uint64_t realtime_ns);
std::string isoTime(uint64_t realtime_ns);
// A kernel's name as a table shows it: no "void ", no parameter list, at most 80 characters.
std::string kernelName(std::string_view name);

}  // namespace commtrace::report::fmt
