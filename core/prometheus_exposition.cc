#include "core/prometheus_exposition.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace commtrace::prometheus {

std::string quoted(std::string_view value) {
  std::string out = "\"";
  for (const char c : value) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out + '"';
}

std::string familyLines(std::string_view name, std::string_view type, std::string_view help) {
  std::string out = "# HELP ";
  ((out += name) += ' ') += help;
  ((out += "\n# TYPE ") += name) += ' ';
  (out += type) += '\n';
  return out;
}

bool replaceFile(const std::string& path, std::string_view text) {
  const std::string temporary = path + ".tmp";
  const int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  int error = done == text.size() ? 0 : (errno != 0 ? errno : EIO);
  if (close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && rename(temporary.c_str(), path.c_str()) == 0) return true;
  if (error == 0) error = errno;
  unlink(temporary.c_str());
  errno = error;
  return false;
}

}  // namespace commtrace::prometheus
