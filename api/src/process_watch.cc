#include "kvx/process_watch.h"

#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>

namespace kvx {

namespace {

// "<boot id>/pid:<inode of this pid namespace>", or "" where /proc does not say.
std::string hostKey() {
  // A boot id is 36 characters; the first line is all of it.
  std::ifstream file("/proc/sys/kernel/random/boot_id");
  std::string id;
  struct stat ns {};
  if (!file || !std::getline(file, id) || ::stat("/proc/self/ns/pid", &ns) != 0) return "";
  while (!id.empty() && (id.back() == '\r' || id.back() == ' ')) id.pop_back();
  if (id.empty() || id.size() > 128) return "";
  return id + "/pid:" + std::to_string(ns.st_ino);
}

}  // namespace

ProcessIdentity thisProcess() {
  static const std::string host = hostKey();
  return ProcessIdentity{static_cast<std::uint64_t>(::getpid()), host};
}

ProcessWatch::~ProcessWatch() {
  if (pidfd_ >= 0) ::close(pidfd_);
}

bool ProcessWatch::ended() {
  if (ended_) return true;
  // A pidfd is readable once its process has exited (zombie or reaped alike).
  pollfd p{pidfd_, POLLIN, 0};
  ended_ = ::poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
  return ended_;
}

Result<std::shared_ptr<ProcessWatch>> watchProcess(const ProcessIdentity& who) {
  if (!who.known()) return failedPrecondition("the peer did not say which process it is");
  if (who.pid > static_cast<std::uint64_t>(std::numeric_limits<pid_t>::max())) {
    return failedPrecondition("pid " + std::to_string(who.pid) + " names no process");
  }
  const ProcessIdentity self = thisProcess();
  if (self.host.empty()) {
    return failedPrecondition("this host's boot id or pid namespace cannot be read from /proc");
  }
  if (who.host != self.host) {
    return failedPrecondition("process " + std::to_string(who.pid) +
                              " runs on another host or pid namespace (" + who.host + ")");
  }
#ifdef SYS_pidfd_open
  const long fd = ::syscall(SYS_pidfd_open, static_cast<pid_t>(who.pid), 0u);
  if (fd >= 0) return std::make_shared<ProcessWatch>(static_cast<int>(fd));
  const int error = errno;
  if (error == ESRCH) return notFound("process " + std::to_string(who.pid) + " is not running");
  return Status(StatusCode::kUnimplemented,
                "pidfd_open(" + std::to_string(who.pid) + "): " + std::strerror(error));
#else
  return Status(StatusCode::kUnimplemented, "this build has no pidfd_open");
#endif
}

}  // namespace kvx
