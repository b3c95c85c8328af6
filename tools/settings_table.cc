#include "tools/settings_table.h"

#include <sstream>

#include "core/settings.h"

namespace commtrace::tools {
namespace {

std::string defaultOf(const SettingSpec& spec) {
  const Settings& d = defaultSettings();
  switch (spec.kind) {
    case SettingKind::kFlag: return (d.*spec.flag) ? "1" : "0";
    case SettingKind::kWholeNumber: return std::to_string(d.*spec.number);
    case SettingKind::kChoice: return std::string(spec.choices[d.*spec.number]);
    case SettingKind::kPath: return "`" + std::string(spec.default_note) + "`";
    case SettingKind::kText: return std::string(spec.default_note);
  }
  return "";
}

std::string valuesOf(const SettingSpec& spec) {
  switch (spec.kind) {
    case SettingKind::kFlag: return "1/0, true/false, yes/no, on/off";
    case SettingKind::kWholeNumber: return std::to_string(spec.min) + "–" + std::to_string(spec.max);
    case SettingKind::kChoice: {
      std::string listed;
      for (std::string_view choice : spec.choices) listed += (listed.empty() ? "" : ", ") + std::string(choice);
      return listed;
    }
    case SettingKind::kPath: return "a path";
    case SettingKind::kText: return "text";
  }
  return "";
}

}  // namespace

std::string settingsMarkdown() {
  std::ostringstream out;
  out << "| variable | default | values | what it changes |\n|---|---|---|---|\n";
  for (const SettingSpec& spec : settingSpecs()) {
    out << "| `" << spec.name << "` | " << defaultOf(spec) << " | " << valuesOf(spec) << " | " << spec.help << " |\n";
  }
  return out.str();
}

}  // namespace commtrace::tools
