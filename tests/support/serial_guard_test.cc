// kvx-test-labels: unit serial
// The guard of serial tests (tests/support/serial_guard.cc) is in force in this very test: a
// child process that starts a thread, as a serial test must not, is stopped with the reason.
// Without the guard (the AddressSanitizer build) the test says it skipped.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
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
  std::string said;
  char chunk[256];
  for (ssize_t n; (n = ::read(pipeFds[0], chunk, sizeof chunk)) > 0;) said.append(chunk, n);
  ::close(pipeFds[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  INFO(said);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGABRT);
  CHECK_THAT(said, Catch::Contains("labelled 'serial'"));
}
