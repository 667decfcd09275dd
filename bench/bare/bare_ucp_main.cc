// kvx-bare-ucp: the bare UCP reference beside every kvx bench figure. See bare_ucp_cli.h for
// the command line, bare_ucp_result.h for the JSON it prints on stdout, bare_ucp_runner.h for
// the exit codes.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "bench/bare/bare_ucp_cli.h"
#include "bench/bare/bare_ucp_initiator.h"
#include "bench/bare/bare_ucp_runner.h"
#include "bench/bare/bare_ucp_target.h"
#include "bench/bare/pipe_channel.h"

using namespace kvx::bench;

namespace {

bool writeAll(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // A peer that died must not kill us by SIGPIPE: writes then fail with EPIPE instead.
  ::signal(SIGPIPE, SIG_IGN);
  auto line = parseBareUcpCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (!line.isOk()) {
    std::cerr << line.status().message() << "\n";
    return kExitUsage;
  }
  if (line->helpRequested) {
    std::cout << line->helpText;
    return kExitOk;
  }
  // stdout carries only our output (the pipe protocol or the JSON): UCX's own messages, which
  // it prints on stdout by default, go to stderr instead.
  const int outFd = ::dup(STDOUT_FILENO);
  ::dup2(STDERR_FILENO, STDOUT_FILENO);

  if (line->role == BareRole::kTarget) {
    PipeChannel channel(STDIN_FILENO, outFd);
    const kvx::Status status = runBareUcpTarget(line->options, channel);
    if (!status.isOk()) {
      std::cerr << "kvx-bare-ucp target: " << status.toString() << "\n";
      return kExitFailed;
    }
    return kExitOk;
  }

  auto result = runBareUcpInitiator(line->options, "/proc/self/exe");
  if (!result.isOk()) {
    std::cerr << "kvx-bare-ucp: " << result.status().toString() << "\n";
    return kExitFailed;
  }
  const std::string json = toJson(*result);
  if (!writeAll(outFd, json + "\n")) {
    std::cerr << "kvx-bare-ucp: writing the result to stdout failed\n";
    return kExitFailed;
  }
  if (!line->jsonFile.empty()) {
    std::ofstream file(line->jsonFile);
    file << json << "\n";
    if (!file) {
      std::cerr << "kvx-bare-ucp: cannot write " << line->jsonFile << "\n";
      return kExitFailed;
    }
  }
  if (!line->quiet) std::cerr << summaryLine(*result) << "\n";
  if (result->verify.checked && !result->verify.ok) {
    std::cerr << "kvx-bare-ucp: verification failed: " << result->verify.detail << "\n";
    return kExitVerifyFailed;
  }
  return kExitOk;
}
