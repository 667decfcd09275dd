#include "daemon/signals.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace kvx::daemon {
namespace {

sigset_t stopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);
  return set;
}

}  // namespace

Result<std::unique_ptr<StopSignal>> StopSignal::install() {
  const sigset_t set = stopSignals();
  if (const int rc = pthread_sigmask(SIG_BLOCK, &set, nullptr); rc != 0) {
    return internalError(std::string("blocking SIGINT/SIGTERM/SIGUSR1 failed: ") +
                         std::strerror(rc));
  }
  const int signalFd = ::signalfd(-1, &set, SFD_CLOEXEC);
  if (signalFd < 0) return internalError(std::string("signalfd: ") + std::strerror(errno));
  const int wakeFd = ::eventfd(0, EFD_CLOEXEC);
  if (wakeFd < 0) {
    ::close(signalFd);
    return internalError(std::string("eventfd: ") + std::strerror(errno));
  }
  std::unique_ptr<StopSignal> stop(new StopSignal(signalFd, wakeFd));
  stop->watcher_ = std::thread([raw = stop.get()] { raw->watch(); });
  return stop;
}

StopSignal::StopSignal(int signalFd, int wakeFd) : signalFd_(signalFd), wakeFd_(wakeFd) {}

StopSignal::~StopSignal() {
  const std::uint64_t one = 1;
  if (::write(wakeFd_, &one, sizeof(one)) < 0) {
    // Nothing to do: the watcher then only ends with the process.
  }
  if (watcher_.joinable()) watcher_.join();
  ::close(signalFd_);
  ::close(wakeFd_);
}

void StopSignal::watch() {
  while (true) {
    pollfd fds[2] = {{signalFd_, POLLIN, 0}, {wakeFd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if ((fds[1].revents & POLLIN) != 0) return;
    signalfd_siginfo info{};
    if (::read(signalFd_, &info, sizeof(info)) != static_cast<ssize_t>(sizeof(info))) continue;
    const int number = static_cast<int>(info.ssi_signo);
    if (number == SIGUSR1) {
      giveBacks_.fetch_add(1);
      continue;
    }
    // Ctrl-C pressed twice: the operator does not want to wait for a graceful shutdown. A
    // SIGTERM while stopping is not that: a supervisor (or `kvx demo`) may send one to a
    // process that the terminal's SIGINT already stopped.
    if (requested() && number == SIGINT) std::_Exit(128 + number);
    request(number == SIGINT ? "SIGINT" : "SIGTERM");
  }
}

bool StopSignal::waitFor(std::chrono::nanoseconds timeout) {
  sync::UniqueLock lock(mutex_);
  return changed_.wait_for(lock.native(), timeout, [this] { return requested(); });
}

void StopSignal::request(const std::string& why) {
  {
    sync::MutexLock lock(mutex_);
    if (requested()) return;
    reason_ = why;
    requested_.store(true, std::memory_order_release);
  }
  changed_.notify_all();
}

std::string StopSignal::reason() const {
  sync::MutexLock lock(mutex_);
  return reason_;
}

}  // namespace kvx::daemon
