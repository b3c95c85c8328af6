// Runs a program as a user would, in a child process: arguments, environment changes
// (nullopt unsets a variable), stdout and stderr captured through files in a scratch
// directory. Shared by the tests of every command-line program.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace commtrace::testutil {

struct ProgramResult {
  int exit_code = -1;  // -1: could not be run, or killed by a signal
  std::string out, err;
};

inline std::string readText(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), {}};
}

inline std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

inline ProgramResult runProgram(std::vector<std::string> argv, const std::string& scratch_dir,
                                const std::map<std::string, std::optional<std::string>>& env = {}) {
  const std::string out_path = scratch_dir + "/stdout", err_path = scratch_dir + "/stderr";
  std::fflush(nullptr);  // nothing buffered here is written twice
  const pid_t child = fork();
  if (child == 0) {
    for (const auto& [name, value] : env) {
      if (value) setenv(name.c_str(), value->c_str(), 1);
      else unsetenv(name.c_str());
    }
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out < 0 || err < 0) _exit(126);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  ProgramResult r;
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) return r;
  r.exit_code = WEXITSTATUS(status);
  r.out = readText(out_path);
  r.err = readText(err_path);
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  return r;
}

}  // namespace commtrace::testutil
