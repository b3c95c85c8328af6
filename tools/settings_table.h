// `commtrace settings`: every COMMTRACE_* setting from core/settings.cc's one declaration,
// as the Markdown table the README carries (a test holds the README to it).
#pragma once

#include <string>

namespace commtrace::tools {

std::string settingsMarkdown();

}  // namespace commtrace::tools
