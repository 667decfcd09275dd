#pragma once

// NetnsPair: two network namespaces, "prefill" and "decode", joined by a veth pair
// (198.18.0.1/30 and 198.18.0.2/30, addresses private to the pair, no route elsewhere), with
// net.ipv4.tcp_retries2 lowered in both so that the kernel gives up on a cut connection in
// seconds rather than minutes. The names carry this process's pid (kvxnf-<pid>-p,
// kvxnf-<pid>-d; interfaces kvx<pid>p, kvx<pid>d), so that concurrent test processes do not
// collide, and a pair whose creator is gone (a crashed run) is removed by the next one.
// The destructor kills whatever still runs inside either namespace and deletes both.
// Needs root; create() says why when it cannot build the pair (the test then skips).
// Thread: the test's thread.

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/fault/netns/shell_command.h"

namespace kvx::test::netns {

using namespace std::chrono_literals;

inline constexpr const char* kNamespacePrefix = "kvxnf-";
inline constexpr auto kCommandTimeout = 10s;

// What the namespaces and their interfaces are called; passed to the process that runs
// inside the prefill namespace through its environment.
struct NetnsNames {
  std::string prefillNs;
  std::string decodeNs;
  std::string prefillIf;
  std::string decodeIf;
  std::string prefillAddress = "198.18.0.1";
  std::string decodeAddress = "198.18.0.2";

  static NetnsNames forPid(pid_t pid) {
    const std::string id = std::to_string(pid);
    return {kNamespacePrefix + id + "-p", kNamespacePrefix + id + "-d", "kvx" + id + "p",
            "kvx" + id + "d"};
  }

  std::vector<std::string> environment() const {
    return {"KVX_NETNS_PREFILL=" + prefillNs, "KVX_NETNS_DECODE=" + decodeNs,
            "KVX_NETNS_PREFILL_IF=" + prefillIf, "KVX_NETNS_DECODE_IF=" + decodeIf};
  }

  static std::optional<NetnsNames> fromEnvironment() {
    const char* names[] = {"KVX_NETNS_PREFILL", "KVX_NETNS_DECODE", "KVX_NETNS_PREFILL_IF",
                           "KVX_NETNS_DECODE_IF"};
    std::vector<std::string> values;
    for (const char* name : names) {
      const char* value = std::getenv(name);
      if (value == nullptr || *value == '\0') return std::nullopt;
      values.emplace_back(value);
    }
    return NetnsNames{values[0], values[1], values[2], values[3]};
  }
};

// Runs `argv` inside network namespace `ns`.
inline CommandResult inNamespace(const std::string& ns, std::vector<std::string> argv,
                                 std::chrono::milliseconds timeout = kCommandTimeout) {
  argv.insert(argv.begin(), {"ip", "netns", "exec", ns});
  return runCommand(std::move(argv), timeout);
}

// Kills every process left in namespace `ns` (all started by these tests), then deletes it.
inline void removeNamespace(const std::string& ns) {
  const CommandResult pids = runCommand({"ip", "netns", "pids", ns}, kCommandTimeout);
  std::istringstream list(pids.output);
  for (pid_t pid = 0; list >> pid;) {
    if (pid > 1 && pid != ::getpid()) ::kill(pid, SIGKILL);
  }
  (void)runCommand({"ip", "netns", "delete", ns}, kCommandTimeout);
}

// Removes the namespaces of earlier runs whose process no longer exists.
inline void removeStaleNamespaces() {
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/run/netns", error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kNamespacePrefix, 0) != 0) continue;
    const pid_t owner = std::atoi(name.c_str() + std::strlen(kNamespacePrefix));
    if (owner <= 0 || owner == ::getpid()) continue;
    if (::kill(owner, 0) == 0 || errno != ESRCH) continue;  // its test still runs
    removeNamespace(name);
  }
}

// Waits until `iface` in namespace `ns` is up with its carrier (LOWER_UP), by `timeout`.
inline bool waitRunning(const std::string& ns, const std::string& iface,
                        std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const CommandResult r = runCommand({"ip", "-n", ns, "-o", "link", "show", iface}, 2s);
    if (r.ok() && r.output.find("LOWER_UP") != std::string::npos) return true;
    ::usleep(10000);
  }
  return false;
}

class NetnsPair {
 public:
  // The pair for this process; nullptr, with `why` set, when it cannot be built here.
  static std::unique_ptr<NetnsPair> create(std::string& why) {
    if (::geteuid() != 0) {
      why = "network namespaces need root (euid " + std::to_string(::geteuid()) + ")";
      return nullptr;
    }
    removeStaleNamespaces();
    std::unique_ptr<NetnsPair> pair(new NetnsPair(NetnsNames::forPid(::getpid())));
    const NetnsNames& n = pair->names_;
    const std::vector<std::vector<std::string>> steps = {
        {"ip", "netns", "add", n.prefillNs},
        {"ip", "netns", "add", n.decodeNs},
        {"ip", "link", "add", n.prefillIf, "netns", n.prefillNs, "type", "veth", "peer", "name",
         n.decodeIf, "netns", n.decodeNs},
        {"ip", "-n", n.prefillNs, "addr", "add", n.prefillAddress + "/30", "dev", n.prefillIf},
        {"ip", "-n", n.decodeNs, "addr", "add", n.decodeAddress + "/30", "dev", n.decodeIf},
        {"ip", "-n", n.prefillNs, "link", "set", "lo", "up"},
        {"ip", "-n", n.decodeNs, "link", "set", "lo", "up"},
        {"ip", "-n", n.prefillNs, "link", "set", n.prefillIf, "up"},
        {"ip", "-n", n.decodeNs, "link", "set", n.decodeIf, "up"},
        {"ip", "netns", "exec", n.prefillNs, "sysctl", "-qw", "net.ipv4.tcp_retries2=4"},
        {"ip", "netns", "exec", n.decodeNs, "sysctl", "-qw", "net.ipv4.tcp_retries2=4"},
    };
    for (const auto& step : steps) {
      const CommandResult r = runCommand(step, kCommandTimeout);
      if (!r.ok()) {
        std::string command;
        for (const std::string& word : step) command += (command.empty() ? "" : " ") + word;
        why = "'" + command + "' failed (exit " + std::to_string(r.exitCode) +
              (r.timedOut ? ", timed out" : "") + "): " + r.output;
        while (!why.empty() && why.back() == '\n') why.pop_back();
        return nullptr;
      }
    }
    // The carrier of a veth comes up asynchronously (link watch, up to a second); UCX does
    // not list an interface that is not running yet.
    for (const auto& [ns, iface] :
         {std::pair{n.prefillNs, n.prefillIf}, {n.decodeNs, n.decodeIf}}) {
      if (!waitRunning(ns, iface, 5s)) {
        why = "interface " + iface + " in " + ns + " did not come up in 5 s";
        return nullptr;
      }
    }
    return pair;
  }

  ~NetnsPair() {
    removeNamespace(names_.prefillNs);
    removeNamespace(names_.decodeNs);
  }
  NetnsPair(const NetnsPair&) = delete;
  NetnsPair& operator=(const NetnsPair&) = delete;

  const NetnsNames& names() const { return names_; }

 private:
  explicit NetnsPair(NetnsNames names) : names_(std::move(names)) {}
  NetnsNames names_;
};

}  // namespace kvx::test::netns
