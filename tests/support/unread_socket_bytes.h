#pragma once

// unreadSocketBytes(pid, exceptLocalPort): how many bytes sit in the receive queues of a
// process's TCP sockets, unread by it, as the kernel lists them (/proc/<pid>/net/tcp and tcp6,
// matched to the process's descriptors by inode), leaving out sockets on one local port (an
// agent's control channel, say, to count only its data path). A stopped process's count is what it
// will read once it resumes: the fault tests use it to show that bytes are certain to arrive late.
// Sockets the kernel has unhashed (e.g. reset by the peer) are not listed and not counted.

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace kvx::test {

inline std::uint64_t unreadSocketBytes(pid_t pid, std::uint16_t exceptLocalPort = 0) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::set<std::uint64_t> inodes;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(proc + "/fd", error)) {
    char target[64] = {};
    const ssize_t n = ::readlink(entry.path().c_str(), target, sizeof(target) - 1);
    if (n <= 0) continue;
    const std::string link(target, static_cast<std::size_t>(n));
    if (link.rfind("socket:[", 0) == 0) inodes.insert(std::stoull(link.substr(8)));
  }
  std::uint64_t unread = 0;
  for (const char* table : {"/net/tcp", "/net/tcp6"}) {
    std::ifstream in(proc + table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      // sl local remote st tx_queue:rx_queue tr:when retrnsmt uid timeout inode ...
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout;
      std::uint64_t inode = 0;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode;
      if (!fields || inodes.count(inode) == 0) continue;
      const std::size_t colon = queues.find(':');
      const std::size_t portAt = local.rfind(':');
      if (colon == std::string::npos || portAt == std::string::npos) continue;
      if (exceptLocalPort != 0 &&
          std::stoul(local.substr(portAt + 1), nullptr, 16) == exceptLocalPort) {
        continue;
      }
      unread += std::stoull(queues.substr(colon + 1), nullptr, 16);
    }
  }
  return unread;
}

}  // namespace kvx::test
