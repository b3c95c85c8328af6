#include "tools/report/load/native_symbols.h"

#include <cxxabi.h>
#include <elfutils/libdwfl.h>

#include <cstdlib>
#include <cstring>

namespace commtrace::report {
namespace {

// Files opened by path; separate debug info found the standard ways (.gnu_debuglink,
// /usr/lib/debug/.build-id).
char* g_debuginfo_path = nullptr;
const Dwfl_Callbacks kOffline = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &g_debuginfo_path,
};

std::string hexOf(const unsigned char* bits, int length) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (int i = 0; i < length; ++i) {
    hex += kDigits[bits[i] >> 4];
    hex += kDigits[bits[i] & 15];
  }
  return hex;
}

// The symbol's name demangled, without its version ("__libc_start_main@@GLIBC_2.34").
std::string demangled(const char* versioned) {
  const std::string name(versioned, std::strcspn(versioned, "@"));
  int status = 0;
  char* text = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || text == nullptr) return name;
  std::string out(text);
  std::free(text);
  return out;
}

std::string baseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

}  // namespace

struct NativeSymbols::Module {
  Dwfl* dwfl = nullptr;
  Dwfl_Module* module = nullptr;  // null: unreadable
  ~Module() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }
};

NativeSymbols::NativeSymbols() = default;
NativeSymbols::~NativeSymbols() = default;

NativeSymbols::Module* NativeSymbols::moduleFor(std::string_view path, std::string_view build_id) {
  const std::string key = std::string(path) + '\n' + std::string(build_id);
  auto [it, inserted] = modules_.try_emplace(key);
  if (!inserted) return it->second.get();
  it->second = std::make_unique<Module>();
  Module& m = *it->second;
  const auto refuse = [&](std::string why) {
    unreadable_.emplace_back(std::string(path), std::move(why));
    if (m.dwfl != nullptr) dwfl_end(m.dwfl);
    m.dwfl = nullptr;
    m.module = nullptr;
    return &m;
  };
  m.dwfl = dwfl_begin(&kOffline);
  if (m.dwfl == nullptr) return refuse("libdwfl could not start");
  // At 0, with its segments at their file addresses: what the run recorded (address in memory
  // less the load bias).
  const std::string file(path);
  m.module = dwfl_report_elf(m.dwfl, file.c_str(), file.c_str(), -1, 0, true);
  dwfl_report_end(m.dwfl, nullptr, nullptr);
  if (m.module == nullptr) return refuse(std::string("cannot read it here (") + dwfl_errmsg(-1) + ")");
  const unsigned char* bits = nullptr;
  GElf_Addr where = 0;
  const int length = dwfl_module_build_id(m.module, &bits, &where);
  if (!build_id.empty() && (length <= 0 || hexOf(bits, length) != build_id))
    return refuse("the file here is another build than the run's");
  return &m;
}

NativeSymbols::Symbol NativeSymbols::lookup(std::string_view module_path, std::string_view build_id, uint64_t address) {
  Symbol symbol;
  Module* m = module_path.empty() ? nullptr : moduleFor(module_path, build_id);
  if (m == nullptr || m->module == nullptr || address == 0) return symbol;
  const Dwarf_Addr call = address - 1;  // inside the call instruction, not at the next line's
  GElf_Off offset = 0;
  GElf_Sym sym;
  const char* name = dwfl_module_addrinfo(m->module, call, &offset, &sym, nullptr, nullptr, nullptr);
  if (name != nullptr) symbol.function = demangled(name);
  // The line table's nearest row at or before the address; from another function's (code
  // without line information after code with it, as _start after the program's own) it is
  // no line of this one.
  Dwfl_Line* line = dwfl_module_getsrc(m->module, call);
  Dwarf_Addr line_address = 0;
  int number = 0;
  const char* file = line != nullptr ? dwfl_lineinfo(line, &line_address, &number, nullptr, nullptr, nullptr) : nullptr;
  if (file != nullptr && (name == nullptr || line_address >= call - offset)) {
    symbol.file = baseName(file);
    symbol.line = number;
  }
  return symbol;
}

}  // namespace commtrace::report
