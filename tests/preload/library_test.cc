// libcommtrace.so as a host process meets it: what it pulls in, what it exports, and that
// a plain dlopen + start + stop leaves one readable trace file.
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "sink/reader.h"
#include "tests/support/temp_dir.h"

namespace commtrace {
namespace {

constexpr const char* kLibrary = COMMTRACE_SO_PATH;

// The file the ELF checks read: this build's library, or the one COMMTRACE_LIBRARY_UNDER_TEST
// names (`./dev test` points it at the aarch64 cross build: the checks only read the file).
const char* libraryUnderTest() {
  const char* other = std::getenv("COMMTRACE_LIBRARY_UNDER_TEST");
  return other != nullptr && other[0] != '\0' ? other : kLibrary;
}

// The dynamic-linking facts of an ELF64 shared object, read from its section headers.
struct DynamicInfo {
  std::vector<std::string> needed;  // DT_NEEDED entries
  std::set<std::string> exported;   // defined global/weak dynamic symbols
  std::string error;                // non-empty when the file could not be parsed
};

class ElfFile {
 public:
  explicit ElfFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  // A T at offset, or nullptr if it would run past the end of the file.
  template <class T>
  const T* at(uint64_t offset) const {
    if (offset > bytes_.size() || bytes_.size() - offset < sizeof(T)) return nullptr;
    return reinterpret_cast<const T*>(bytes_.data() + offset);
  }

  std::string stringAt(const Elf64_Shdr& strtab, uint64_t index) const {
    if (index >= strtab.sh_size || strtab.sh_offset + strtab.sh_size > bytes_.size()) return "<bad string>";
    const char* s = bytes_.data() + strtab.sh_offset + index;
    return std::string(s, strnlen(s, strtab.sh_size - index));
  }

  size_t size() const { return bytes_.size(); }

 private:
  std::string bytes_;
};

DynamicInfo readDynamicInfo(const std::string& path) {
  DynamicInfo info;
  const ElfFile elf(path);
  const auto* ehdr = elf.at<Elf64_Ehdr>(0);
  if (ehdr == nullptr || std::memcmp(ehdr->e_ident, ELFMAG, SELFMAG) != 0 || ehdr->e_ident[EI_CLASS] != ELFCLASS64) {
    info.error = path + " is not an ELF64 file";
    return info;
  }
  auto section = [&](uint32_t index) { return elf.at<Elf64_Shdr>(ehdr->e_shoff + uint64_t{index} * ehdr->e_shentsize); };
  for (uint32_t i = 0; i < ehdr->e_shnum; ++i) {
    const Elf64_Shdr* sh = section(i);
    const Elf64_Shdr* strtab = sh == nullptr ? nullptr : section(sh->sh_link);
    if (sh == nullptr || strtab == nullptr || sh->sh_entsize == 0) continue;
    const uint64_t entries = sh->sh_size / sh->sh_entsize;
    if (sh->sh_type == SHT_DYNAMIC) {
      for (uint64_t e = 0; e < entries; ++e) {
        const auto* dyn = elf.at<Elf64_Dyn>(sh->sh_offset + e * sh->sh_entsize);
        if (dyn != nullptr && dyn->d_tag == DT_NEEDED) info.needed.push_back(elf.stringAt(*strtab, dyn->d_un.d_val));
      }
    } else if (sh->sh_type == SHT_DYNSYM) {
      for (uint64_t e = 0; e < entries; ++e) {
        const auto* sym = elf.at<Elf64_Sym>(sh->sh_offset + e * sh->sh_entsize);
        if (sym == nullptr || sym->st_shndx == SHN_UNDEF) continue;
        const unsigned bind = ELF64_ST_BIND(sym->st_info);
        if (bind != STB_GLOBAL && bind != STB_WEAK && bind != STB_GNU_UNIQUE) continue;
        info.exported.insert(elf.stringAt(*strtab, sym->st_name));
      }
    }
  }
  return info;
}

bool sanitizerBuild() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  return true;
#endif
#endif
  return false;
}

bool allowedDependency(const std::string& name) {
  static const std::set<std::string> kAllowed = {"libc.so.6", "libm.so.6", "libgcc_s.so.1", "libstdc++.so.6",
                                                 "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1"};
  if (kAllowed.count(name) != 0) return true;
  // A sanitizer build's library needs its sanitizer runtime; a release build never does.
  return sanitizerBuild() && (name.starts_with("libasan.so") || name.starts_with("libtsan.so") ||
                              name.starts_with("libubsan.so"));
}

TEST(LibraryTest, NeedsOnlyTheCRuntimeAndLibstdcxx) {
  const char* library = libraryUnderTest();
  const DynamicInfo info = readDynamicInfo(library);
  ASSERT_EQ(info.error, "");
  // libc.so.6 is always there: without it the parse found nothing and proves nothing.
  ASSERT_NE(std::find(info.needed.begin(), info.needed.end(), "libc.so.6"), info.needed.end());
  for (const std::string& name : info.needed) EXPECT_TRUE(allowedDependency(name)) << library << " needs " << name;
}

TEST(LibraryTest, ExportsOnlyItsFacesEntryPoints) {
  const char* library = libraryUnderTest();
  const DynamicInfo info = readDynamicInfo(library);
  ASSERT_EQ(info.error, "");
  const std::set<std::string> api = {
      "commtrace_start", "commtrace_stop", "commtrace_version",
      // the NCCL profiler plugin face
      "ncclProfiler_v4", "ncclProfiler_v5", "ncclProfiler_v6", "ncclProfiler_v7",
      // the NVTX face (NVTX_INJECTION64_PATH)
      "InitializeInjectionNvtx2",
      // the preload face: NCCL API
      "ncclCommInitRank", "ncclCommInitRankConfig", "ncclCommInitRankScalable", "ncclCommInitAll", "ncclCommSplit",
      "ncclCommShrink", "ncclCommDestroy", "ncclCommAbort", "ncclCommFinalize", "ncclAllReduce", "ncclBroadcast",
      "ncclBcast", "ncclReduce", "ncclAllGather", "ncclReduceScatter", "ncclAlltoAll", "ncclGather", "ncclScatter",
      "ncclSend", "ncclRecv", "ncclGroupStart", "ncclGroupEnd",
      // the preload face: CUDA runtime calls that make the CPU wait
      "cudaStreamSynchronize", "cudaStreamSynchronize_ptsz", "cudaDeviceSynchronize", "cudaEventSynchronize",
      "cudaStreamWaitEvent", "cudaStreamWaitEvent_ptsz",
      // the preload face: ways out of a process that skip destructors
      "_exit", "_Exit", "execve", "execv", "execvp", "execvpe"};
  for (const std::string& name : info.exported) EXPECT_TRUE(api.count(name) != 0) << library << " exports " << name;
  for (const std::string& name : api) EXPECT_TRUE(info.exported.count(name) != 0) << library << " lacks " << name;
}

// Exit codes of the child that loads the library.
enum ChildStatus { kOk = 0, kDlopenFailed = 10, kDlsymFailed, kWrongVersion, kStartFailed };

// In the child: loads the library the way a host program would and records a session.
int loadStartAndStop(const std::string& dir) {
  void* lib = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return kDlopenFailed;
  }
  auto start = reinterpret_cast<int (*)(const char*)>(dlsym(lib, "commtrace_start"));
  auto stop = reinterpret_cast<void (*)()>(dlsym(lib, "commtrace_stop"));
  auto version = reinterpret_cast<const char* (*)()>(dlsym(lib, "commtrace_version"));
  if (start == nullptr || stop == nullptr || version == nullptr) return kDlsymFailed;
  if (std::strcmp(version(), COMMTRACE_VERSION) != 0) return kWrongVersion;
  if (start(dir.c_str()) != 0) return kStartFailed;
  stop();
  return kOk;
}

std::vector<std::string> traceFilesIn(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".ctrace") out.push_back(entry.path().string());
  }
  return out;
}

TEST(LibraryTest, DlopenedLibraryWritesOneTraceFileOfItsProcess) {
  testutil::TempDir dir;
  std::fflush(nullptr);  // nothing buffered twice
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(loadStartAndStop(dir.path()));
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "child died with signal " << WTERMSIG(status);
  ASSERT_EQ(WEXITSTATUS(status), kOk) << "see ChildStatus";

  const std::vector<std::string> files = traceFilesIn(dir.path());
  ASSERT_EQ(files.size(), 1u);
  TraceReader reader;
  std::string error;
  ASSERT_TRUE(reader.open(files[0], error)) << error;
  EXPECT_EQ(reader.header().pid(), child);
  EXPECT_EQ(reader.header().tracer_version(), COMMTRACE_VERSION);
}

}  // namespace
}  // namespace commtrace
