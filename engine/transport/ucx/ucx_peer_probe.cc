#include "engine/transport/ucx/ucx_peer_probe.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "engine/transport/ucx/ucx_config.h"

extern char** environ;

namespace kvx::engine::ucx {
namespace {

constexpr std::chrono::milliseconds kProbeTimeout{10000};
constexpr std::size_t kMaxReasonBytes = 2048;

bool isExecutable(const std::string& path) {
  struct stat info {};
  return !path.empty() && ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

// Closes a descriptor once.
struct Fd {
  int fd = -1;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

// What the probe reads on stdin: a count, then each blob as kind (u8), length (u32) and
// bytes, native byte order; the first blob is the address, the others keys.
void appendBlob(std::vector<std::uint8_t>& out, std::uint8_t kind,
                std::span<const std::uint8_t> blob) {
  out.push_back(kind);
  const auto length = static_cast<std::uint32_t>(blob.size());
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(&length);
  out.insert(out.end(), bytes, bytes + sizeof length);
  out.insert(out.end(), blob.begin(), blob.end());
}

std::string addressKey(std::span<const std::uint8_t> address) {
  return "A" + std::string(reinterpret_cast<const char*>(address.data()), address.size());
}

std::string keyKey(std::span<const std::uint8_t> address, const PeerKey& key) {
  std::string out = "K";
  out.push_back(static_cast<char>(key.kind));
  const auto length = static_cast<std::uint32_t>(address.size());
  out.append(reinterpret_cast<const char*>(&length), sizeof length);
  out.append(reinterpret_cast<const char*>(address.data()), address.size());
  out.append(reinterpret_cast<const char*>(key.packed.data()), key.packed.size());
  return out;
}

// The index of the key the probe was checking when it stopped ("checking key 3 of 7"), or
// -1 when it had not reached the keys.
long keyInProgress(const std::string& text) {
  const std::string marker = "checking key ";
  const std::size_t at = text.rfind(marker);
  if (at == std::string::npos) return -1;
  return std::strtol(text.c_str() + at + marker.size(), nullptr, 10);
}

std::string lastLines(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.size() > kMaxReasonBytes) text = "..." + text.substr(text.size() - kMaxReasonBytes);
  return text;
}

// What a probe process said and how it ended.
struct ProbeRun {
  std::string output;     // stdout and stderr, the last few KiB
  int status = 0;         // as waitpid gives it
  bool timedOut = false;  // killed at kProbeTimeout
};

// This process's environment (UCX_* settings included), with crash handlers off: a crash in
// the probe is an answer, not something to print a backtrace for. In a sanitizer build the
// probe is instrumented too: what a sanitizer says about it goes to its output (the reason
// given), not to the log files a sanitizer run collects from the processes it tests. UCX's
// memory events are off: the probe registers no memory, and installing their hooks is most
// of UCX 1.22's start-up here (0.41 s of 0.42, spent patching code; 0.01 s without).
std::vector<std::string> probeEnvironment() {
  const char* overridden[] = {
      "UCX_HANDLE_ERRORS=", "UCX_MEM_EVENTS=", "ASAN_OPTIONS=", "UBSAN_OPTIONS=", "TSAN_OPTIONS="};
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    bool keep = true;
    for (const char* name : overridden) {
      keep = keep && std::strncmp(*e, name, std::strlen(name)) != 0;
    }
    if (keep) environment.emplace_back(*e);
  }
  environment.emplace_back("UCX_HANDLE_ERRORS=none");
  environment.emplace_back("UCX_MEM_EVENTS=no");
  environment.emplace_back(
      "ASAN_OPTIONS=log_path=stderr:detect_leaks=0:handle_segv=0:handle_abort=0:handle_sigbus=0:"
      "handle_sigfpe=0:handle_sigill=0");
  environment.emplace_back("UBSAN_OPTIONS=log_path=stderr");
  environment.emplace_back("TSAN_OPTIONS=log_path=stderr");
  return environment;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Runs `args` (args[0] the probe) with `input` on its stdin, collecting its output, all within
// kProbeTimeout: writing, reading and waiting for it to exit share that deadline, and a probe
// still running at it is killed. Both pipe ends of this side are non-blocking, so a probe that
// neither reads nor exits cannot hold this thread past the deadline.
Result<ProbeRun> runProbe(std::vector<std::string> args, const std::vector<std::uint8_t>& input) {
  int inPipe[2];
  int outPipe[2];
  if (::pipe2(inPipe, O_CLOEXEC) != 0) return internalError("pipe for the UCX probe failed");
  Fd toProbe{inPipe[1]};
  Fd probeIn{inPipe[0]};
  if (::pipe2(outPipe, O_CLOEXEC) != 0) return internalError("pipe for the UCX probe failed");
  Fd fromProbe{outPipe[0]};
  Fd probeOut{outPipe[1]};

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, probeIn.fd, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, probeOut.fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, probeOut.fd, STDERR_FILENO);
  std::vector<char*> argv = pointers(args);
  std::vector<std::string> environment = probeEnvironment();
  std::vector<char*> envp = pointers(environment);
  pid_t pid = -1;
  const int spawned =
      ::posix_spawn(&pid, args[0].c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    return internalError("starting the UCX probe " + args[0] + ": " + std::strerror(spawned));
  }
  probeIn.reset();
  probeOut.reset();
  ::fcntl(toProbe.fd, F_SETFL, O_NONBLOCK);
  ::fcntl(fromProbe.fd, F_SETFL, O_NONBLOCK);

  // A probe that exits early closes its stdin: EPIPE, not SIGPIPE (MSG_NOSIGNAL does not
  // apply to pipes, so the signal is blocked meanwhile and a pending one taken back).
  sigset_t pipeSignal, previous;
  sigemptyset(&pipeSignal);
  sigaddset(&pipeSignal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous);
  ProbeRun run;
  const auto deadline = std::chrono::steady_clock::now() + kProbeTimeout;
  auto left = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                 std::chrono::steady_clock::now())
        .count();
  };
  std::size_t written = 0;
  if (input.empty()) toProbe.reset();
  while (fromProbe.fd >= 0) {
    if (left() <= 0) {
      run.timedOut = true;
      break;
    }
    pollfd fds[2] = {{fromProbe.fd, POLLIN, 0}, {toProbe.fd, POLLOUT, 0}};
    const int ready = ::poll(fds, toProbe.fd >= 0 ? 2 : 1, static_cast<int>(left()));
    if (ready <= 0) continue;  // EINTR, or the deadline: checked above
    if (toProbe.fd >= 0 && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP)) != 0) {
      const ssize_t n = ::write(toProbe.fd, input.data() + written, input.size() - written);
      if (n > 0) written += static_cast<std::size_t>(n);
      if ((n < 0 && errno != EINTR && errno != EAGAIN) || written == input.size()) {
        toProbe.reset();  // all of it, or the probe stopped reading: end of its input
      }
    }
    if ((fds[0].revents & (POLLIN | POLLERR | POLLHUP)) != 0) {
      char buffer[4096];
      const ssize_t n = ::read(fromProbe.fd, buffer, sizeof buffer);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        fromProbe.reset();  // the probe closed its output: it is exiting
      } else if (n > 0) {
        run.output.append(buffer, static_cast<std::size_t>(n));
        if (run.output.size() > 4 * kMaxReasonBytes) {
          run.output.erase(0, run.output.size() - 2 * kMaxReasonBytes);
        }
      }
    }
  }
  toProbe.reset();
  timespec none{};
  while (sigtimedwait(&pipeSignal, nullptr, &none) > 0) {
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);

  // Its exit, by the same deadline.
  while (!run.timedOut) {
    const pid_t done = ::waitpid(pid, &run.status, WNOHANG);
    if (done == pid) return run;
    if (done < 0 && errno != EINTR) return internalError("waiting for the UCX probe failed");
    if (left() <= 0) {
      run.timedOut = true;
      break;
    }
    ::poll(nullptr, 0, 1);
  }
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, &run.status, 0) < 0 && errno == EINTR) {
  }
  return run;
}

// Marks this code's object file for dladdr: the kvx executable, or libkvx.so inside a host
// program (Python, a server).
const char kProbeAnchor = 0;

// kvx-ucx-probe in the directory of the object file this code was linked into (a `kvx` copied
// together with its probe, or a libkvx.so shipped beside it), or "" when that cannot be told.
// Not the running executable's directory: in a host program that is the host's (/usr/bin for
// Python), where a probe is no part of this kvx.
std::string besideThisCode() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  Dl_info info{};
  std::filesystem::path object;
  if (::dladdr(&kProbeAnchor, &info) != 0 && info.dli_fname != nullptr) object = info.dli_fname;
  // The main program's own name comes back as it was started (maybe relative); a shared
  // library's as the loader found it.
  if (object.empty() || !object.is_absolute() ||
      (!self.empty() && std::filesystem::equivalent(object, self, error))) {
    object = self;
  }
  if (object.empty()) return {};
  return (object.parent_path() / "kvx-ucx-probe").string();
}

}  // namespace

Result<std::string> ucxProbePath() {
  if (const char* env = std::getenv("KVX_UCX_PROBE"); env != nullptr && *env != '\0') {
    if (isExecutable(env)) return std::string(env);
    return failedPrecondition(std::string("KVX_UCX_PROBE names '") + env +
                              "', which is not an executable file");
  }
  const std::string beside = besideThisCode();
  for (const std::string& candidate :
       {beside, std::string(KVX_UCX_PROBE_BUILD_PATH), std::string(KVX_UCX_PROBE_INSTALL_PATH)}) {
    if (!candidate.empty() && isExecutable(candidate)) return candidate;
  }
  return failedPrecondition(std::string("kvx-ucx-probe, which checks peers' UCX addresses, is "
                                        "not at ") +
                            (beside.empty() ? "" : beside + ", ") + KVX_UCX_PROBE_BUILD_PATH +
                            " nor " + KVX_UCX_PROBE_INSTALL_PATH +
                            "; install kvx whole or set KVX_UCX_PROBE to its path");
}

UcxPeerProbe::UcxPeerProbe(const TransportOptions& options)
    : transports_(options.transports), netDevices_(options.netDevices) {}

std::uint64_t UcxPeerProbe::probesRun() const {
  sync::MutexLock lock(mutex_);
  return probesRun_;
}

Status UcxPeerProbe::check(std::span<const std::uint8_t> framedAddress,
                           std::span<const PeerKey> keys) {
  std::vector<std::uint8_t> input;
  std::vector<std::string> unseen;      // cache entries to add once the probe passes
  std::vector<std::size_t> probedKeys;  // indices into `keys` of the keys sent to the probe
  {
    sync::MutexLock lock(mutex_);
    std::string address = addressKey(framedAddress);
    if (!accepted_.contains(address)) unseen.push_back(std::move(address));
    for (std::size_t i = 0; i < keys.size(); ++i) {
      std::string entry = keyKey(framedAddress, keys[i]);
      if (accepted_.contains(entry)) continue;
      unseen.push_back(std::move(entry));
      probedKeys.push_back(i);
    }
    if (unseen.empty()) return Status::ok();
    ++probesRun_;
  }
  const auto count = static_cast<std::uint32_t>(1 + probedKeys.size());
  const auto* countBytes = reinterpret_cast<const std::uint8_t*>(&count);
  input.insert(input.end(), countBytes, countBytes + sizeof count);
  appendBlob(input, 0, framedAddress);
  for (std::size_t i : probedKeys) {
    appendBlob(input, static_cast<std::uint8_t>(keys[i].kind), keys[i].packed);
  }
  KVX_ASSIGN_OR_RETURN(std::string probe, ucxProbePath());
  KVX_ASSIGN_OR_RETURN(
      ProbeRun run,
      runProbe({probe, "--transports", transports_, "--net-devices", netDevices_}, input));
  const long keyIndex = keyInProgress(run.output);
  std::string what;
  if (keyIndex >= 1 && static_cast<std::size_t>(keyIndex) <= probedKeys.size()) {
    const std::size_t index = probedKeys[static_cast<std::size_t>(keyIndex) - 1];
    what = "the peer's packed remote key #" + std::to_string(index) + " (" +
           std::to_string(keys[index].packed.size()) + " bytes)";
  } else {
    what = "the peer's UCX worker address (" + std::to_string(framedAddress.size()) + " bytes)";
  }
  what += ", checked by " + probe + ",";
  if (run.timedOut) {
    return timedOut(what + " did not check out within " + std::to_string(kProbeTimeout.count()) +
                    " ms");
  }
  if (WIFSIGNALED(run.status)) {
    return invalidArgument(
        what + " made UCX crash (signal " + std::to_string(WTERMSIG(run.status)) + ", " +
        strsignal(WTERMSIG(run.status)) + "): refused; UCX said: " + lastLines(run.output));
  }
  if (!WIFEXITED(run.status) || WEXITSTATUS(run.status) != 0) {
    const bool unreachable = run.output.find("Destination is unreachable") != std::string::npos;
    return invalidArgument(what + " was refused by UCX: " + lastLines(run.output) +
                           (unreachable ? unreachableHint(netDevices_) : ""));
  }
  sync::MutexLock lock(mutex_);
  for (std::string& entry : unseen) accepted_.insert(std::move(entry));
  return Status::ok();
}

}  // namespace kvx::engine::ucx
