#include "daemon/protocol_output.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>

namespace kvx::daemon {
namespace {

std::atomic<int> protocolFd{-1};

}  // namespace

void ProtocolOutput::claim() {
  if (protocolFd.load() >= 0) return;
  std::fflush(stdout);
  const int saved = ::dup(STDOUT_FILENO);
  if (saved < 0) return;  // stdout stays the protocol stream
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  protocolFd.store(saved);
}

void ProtocolOutput::writeLine(const std::string& line) {
  const int fd = protocolFd.load();
  if (fd < 0) {
    std::fputs((line + "\n").c_str(), stdout);
    std::fflush(stdout);
    return;
  }
  const std::string text = line + "\n";
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent closed the pipe: nobody reads the protocol any more
    written += static_cast<std::size_t>(n);
  }
}

}  // namespace kvx::daemon
