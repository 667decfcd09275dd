// kvx-test-labels: unit serial
// process_watch: this process's identity, and a watch that tells when another process of this
// host and pid namespace has ended (and never mistakes a later process for it).
#include "kvx/process_watch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

using namespace kvx;

namespace {

// A child that sleeps until killed.
pid_t startSleeper() {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  return pid;
}

// Kills and reaps a child still there when it goes out of scope (a failed REQUIRE).
struct Reaped {
  pid_t pid;
  ~Reaped() {
    if (::waitpid(pid, nullptr, WNOHANG) == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

bool endsWithin(ProcessWatch& watch, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!watch.ended()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace

TEST_CASE("this process names its pid and a key of its host and pid namespace") {
  const ProcessIdentity self = thisProcess();
  CHECK(self.pid == static_cast<std::uint64_t>(::getpid()));
  CHECK_THAT(self.host, Catch::Contains("/pid:"));
  CHECK(self.known());
}

TEST_CASE("a watched process is seen to end, exited or still unreaped") {
  const pid_t pid = startSleeper();
  const Reaped reaped{pid};
  ProcessIdentity who = thisProcess();
  who.pid = static_cast<std::uint64_t>(pid);
  auto watch = watchProcess(who);
  if (!watch.isOk() && watch.status().code() == StatusCode::kUnimplemented) {
    WARN("pidfds are refused here: " << watch.status().toString());
    return;
  }
  REQUIRE(watch.isOk());
  CHECK_FALSE((*watch)->ended());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK_FALSE((*watch)->ended());
  REQUIRE(::kill(pid, SIGKILL) == 0);
  CHECK(endsWithin(**watch, std::chrono::seconds(5)));  // a zombie: not reaped yet
  ::waitpid(pid, nullptr, 0);
  CHECK((*watch)->ended());
}

TEST_CASE("a process of another host or pid namespace, or none named, cannot be watched") {
  ProcessIdentity other = thisProcess();
  other.host = "another-boot/pid:1";
  auto watch = watchProcess(other);
  CHECK(watch.status().code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(watch.status().message(), Catch::Contains("another host or pid namespace"));
  CHECK(watchProcess(ProcessIdentity{}).status().code() == StatusCode::kFailedPrecondition);
  ProcessIdentity beyondPids = thisProcess();
  beyondPids.pid = std::uint64_t{1} << 31;  // would be a negative pid_t
  CHECK(watchProcess(beyondPids).status().code() == StatusCode::kFailedPrecondition);
}

TEST_CASE("a watch made for a process already known to have ended says so") {
  ProcessWatch gone(-1);
  CHECK(gone.ended());
}

TEST_CASE("a process that has already gone is NOT_FOUND, not a watch on whoever gets its pid") {
  const pid_t pid = startSleeper();
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  ProcessIdentity who = thisProcess();
  who.pid = static_cast<std::uint64_t>(pid);
  auto watch = watchProcess(who);
  if (watch.status().code() == StatusCode::kUnimplemented) return;
  CHECK(watch.status().code() == StatusCode::kNotFound);
}
