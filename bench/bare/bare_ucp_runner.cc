#include "bench/bare/bare_ucp_runner.h"

#include "bench/bare/bare_ucp_cli.h"
#include "bench/bare/deadline.h"
#include "process/child_process.h"

namespace kvx::bench {
namespace {

// Startup, the memcpy reference and verification come on top of the measured time.
constexpr auto kMargin = std::chrono::seconds(30);

std::string tail(const std::string& text) {
  constexpr std::size_t kShown = 2000;
  std::string shown = text.size() > kShown ? "..." + text.substr(text.size() - kShown) : text;
  while (!shown.empty() && (shown.back() == '\n' || shown.back() == ' ')) shown.pop_back();
  return shown;
}

}  // namespace

Result<BareUcpResult> runBareUcp(const BareUcpOptions& options, const std::string& binaryPath) {
  KVX_RETURN_IF_ERROR(validate(options));
  std::vector<std::string> args = toArguments(options);
  args.push_back("--quiet");
  const std::string what = "kvx-bare-ucp (" + binaryPath + ")";
  KVX_ASSIGN_OR_RETURN(
      process::ChildProcess child,
      process::ChildProcess::spawn(
          binaryPath, args, {.stdinPipe = true, .captureStderr = true, .killWithParent = true}));
  child.closeStdin();
  const Deadline deadline = deadlineIn(options.timeoutSeconds) + kMargin;
  Result<process::ChildProcess::Output> output = child.readToEnd(deadline);
  if (!output.isOk()) return output.status().withContext(what);
  KVX_ASSIGN_OR_RETURN(const int code, child.waitExit(deadline));
  if (code != kExitOk && code != kExitVerifyFailed) {
    return transportError(what + " exited with code " + std::to_string(code) + ": " +
                          tail(output->err));
  }
  Result<BareUcpResult> result = parseBareUcpResult(output->out);
  if (!result.isOk())
    return result.status().withContext(what + ", stderr '" + tail(output->err) + "'");
  return result;
}

}  // namespace kvx::bench
