#include "core/run_directory.h"

#include <algorithm>

namespace commtrace {
namespace {

constexpr size_t kMaxComponent = 200;  // well under NAME_MAX (255) on every Linux file system

bool keptAsIs(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-' || c == '+' || c == '@';
}

}  // namespace

std::string pathComponentOf(std::string_view name, std::string_view if_empty) {
  std::string out(name.substr(0, kMaxComponent));
  std::replace_if(out.begin(), out.end(), [](char c) { return !keptAsIs(c); }, '_');
  if (!out.empty() && out.front() == '.') out.front() = '_';  // never hidden, never "." or ".."
  return out.empty() ? std::string(if_empty) : out;
}

std::string runDirectory(const Settings& settings, const ProcessIdentity& identity) {
  if (settings.dir[0] != '\0') return settings.dir;
  return std::string(kDefaultRunRoot) + "/" + jobDirectoryName(identity.job_id);
}

}  // namespace commtrace
