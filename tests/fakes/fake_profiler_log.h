// Reads what tests/fake_profiler_plugin.cc logged: one FakeCall per line, in call order.
#pragma once

#include <dirent.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace commtrace::testutil {

struct FakeCall {
  std::string kind;  // init, start, state, stop, finalize
  std::map<std::string, std::string> fields;
  std::vector<uint8_t> descr;  // start: the descriptor's bytes as the plugin received them

  const std::string& operator[](const std::string& key) const {
    static const std::string missing;
    const auto it = fields.find(key);
    return it == fields.end() ? missing : it->second;
  }
  uint64_t num(const std::string& key) const { return std::stoull((*this)[key], nullptr, 0); }
  bool isStart(uint64_t type) const { return kind == "start" && num("type") == type; }
  template <class T>
  T at(size_t offset) const {  // a descriptor field at its ABI offset
    T v{};
    std::memcpy(&v, descr.data() + offset, sizeof v);
    return v;
  }
};

inline std::vector<uint8_t> fromHex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

inline std::vector<FakeCall> readFakeLog(const std::string& path) {
  std::vector<FakeCall> calls;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    FakeCall call;
    words >> call.kind;
    for (std::string word; words >> word;) {
      const size_t eq = word.find('=');
      if (eq == std::string::npos) continue;
      call.fields[word.substr(0, eq)] = word.substr(eq + 1);
    }
    if (call.fields.count("descr")) call.descr = fromHex(call.fields["descr"]);
    calls.push_back(std::move(call));
  }
  return calls;
}

// The fake-<pid>.log files in dir.
inline std::vector<std::string> fakeLogFiles(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (std::strncmp(e->d_name, "fake-", 5) == 0) out.push_back(dir + "/" + e->d_name);
    closedir(d);
  }
  return out;
}

}  // namespace commtrace::testutil
