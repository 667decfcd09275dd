// kvx-test-labels: unit serial
// The guard of serial tests (tests/support/serial_guard.cc) is in force in this very test: a
// child process that starts a thread, as a serial test must not, is stopped with the reason.
// Without the guard (the AddressSanitizer build) the test says it skipped.
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <string>
#include <thread>

// Defined by the guard (null where it is not linked).
extern "C" const int kvxSerialGuardLinked __attribute__((weak));

TEST_CASE("a serial test that starts a thread is stopped, saying why", "[support]") {
  if (&kvxSerialGuardLinked == nullptr) {
    WARN("kvx-test-skipped: a sanitizer build does not link the serial guard");
    return;
  }
  int pipeFds[2];
  REQUIRE(::pipe(pipeFds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::dup2(pipeFds[1], STDERR_FILENO);
    std::thread started([] {});
    started.join();
    ::_exit(0);  // the guard did not stop it
  }
  ::close(pipeFds[1]);
  // The child ends at once either way (stopped, or _exit); a child that hangs is killed at
  // the deadline and fails the test.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  auto msLeft = [&] {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    return static_cast<int>(std::max<std::chrono::milliseconds::rep>(left.count(), 0));
  };
  std::string said;
  char chunk[256];
  pollfd readable{pipeFds[0], POLLIN, 0};
  while (::poll(&readable, 1, msLeft()) > 0) {
    const ssize_t n = ::read(pipeFds[0], chunk, sizeof chunk);
    if (n <= 0) break;
    said.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(pipeFds[0]);
  int status = 0;
  pid_t ended = 0;
  while ((ended = ::waitpid(child, &status, WNOHANG)) == 0 && msLeft() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (ended == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    FAIL("the child neither stopped nor exited within 30 s");
  }
  REQUIRE(ended == child);
  INFO(said);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGABRT);
  CHECK_THAT(said, Catch::Contains("labelled 'serial'"));
}
