// Names for the return addresses of sampled native call stacks (NativeFrame), read offline
// from the modules' files on this machine by elfutils' libdwfl: the function (demangled)
// and, where the file or its separate debug info has lines, the source line. A module is
// opened once, and only where its build id is the one the run recorded: a rebuilt library
// would name other code.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace commtrace::report {

class NativeSymbols {
 public:
  NativeSymbols();
  ~NativeSymbols();
  NativeSymbols(const NativeSymbols&) = delete;
  NativeSymbols& operator=(const NativeSymbols&) = delete;

  struct Symbol {
    std::string function;  // demangled; empty when the module has no symbol there
    std::string file;      // the source file's name, without its directories; empty without lines
    int line = 0;
  };
  // The code at `address`, a return address in the module's file addresses (the call
  // before it is looked up). Nothing is known of a module unreadable() lists.
  Symbol lookup(std::string_view module_path, std::string_view build_id, uint64_t address);

  // Modules whose names could not be read, each with the reason, in the order first met.
  const std::vector<std::pair<std::string, std::string>>& unreadable() const { return unreadable_; }

 private:
  struct Module;
  Module* moduleFor(std::string_view path, std::string_view build_id);

  std::unordered_map<std::string, std::unique_ptr<Module>> modules_;
  std::vector<std::pair<std::string, std::string>> unreadable_;
};

}  // namespace commtrace::report
