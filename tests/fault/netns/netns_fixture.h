#pragma once

// Network faults between two agents in their own network namespaces (see netns_pair.h).
//
// Each test is two Catch2 test cases in one binary:
//  - the visible one (what CTest runs) builds the NetnsPair, or prints "kvx-test-skipped:"
//    when it cannot (not root, no namespaces), then runs this same binary inside the prefill
//    namespace (`ip netns exec`, which also mounts that namespace's /sys, where UCX looks for
//    network devices) with the name of the hidden case, and passes iff it passes. The pair
//    is torn down whatever happens.
//  - the hidden one ("[.]", run only by name) is the prefill side: an in-process KvAgent
//    whose requests' Status the checks read directly. It starts a `kvx agent --role decode
//    --verify` process in the decode namespace, moves requests to it over UCX tcp on the veth
//    pair, and injects the faults with nftables rules on the decode namespace's interface
//    (both directions), or with kvx_nfqueue_delay. Both authenticate their control links with
//    a secret the visible case sets (KVX_AUTH_TOKEN), as agents on a network must.
// Everything the hidden case runs has a deadline; the visible case kills it after
// kPrefillSideTimeout.

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tests/fault/fault_fixture.h"
#include "tests/fault/netns/netns_pair.h"

namespace kvx::test::netns {

using fault::DecodeProcess;
using kvx::process::ChildProcess;

inline constexpr auto kPrefillSideTimeout = 100s;

// How long the prefill side may run: kPrefillSideTimeout, or KVX_NETNS_SIDE_TIMEOUT seconds
// (to explore heavier faults, where reconnecting alone can take half a minute).
inline std::chrono::seconds prefillSideTimeout() {
  const char* text = std::getenv("KVX_NETNS_SIDE_TIMEOUT");
  const long seconds = text == nullptr ? 0 : std::atol(text);
  return seconds > 0 ? std::chrono::seconds(seconds) : kPrefillSideTimeout;
}

// The visible test case's body: runs hidden case `prefillCase` in the prefill namespace of a
// fresh pair. `environment` is added to that process's ("NAME=value"); `pinDevices` false
// leaves UCX_NET_DEVICES unset there (the agents choose their devices).
inline void runPrefillSide(const std::string& prefillCase,
                           const std::vector<std::string>& environment = {},
                           bool pinDevices = true) {
  std::string why;
  const std::unique_ptr<NetnsPair> pair = NetnsPair::create(why);
  if (!pair) {
    std::printf("kvx-test-skipped: %s\n", why.c_str());
    std::fflush(stdout);
    return;
  }
  const NetnsNames& n = pair->names();
  std::vector<std::string> env = n.environment();
  if (pinDevices) env.push_back("UCX_NET_DEVICES=" + n.prefillIf);
  // Agents listening on a non-loopback address authenticate their control links: both sides
  // (the decode process inherits it) share this secret.
  env.push_back("KVX_AUTH_TOKEN=kvx-netns-fault-test-" + std::to_string(::getpid()));
  env.insert(env.end(), environment.begin(), environment.end());
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const CommandResult r = runInheritingOutput(
      "/usr/bin/env", {"env", "ip", "netns", "exec", n.prefillNs, self, prefillCase}, env,
      std::chrono::duration_cast<std::chrono::milliseconds>(prefillSideTimeout()));
  INFO("prefill side '" << prefillCase << "' in namespace " << n.prefillNs);
  CHECK_FALSE(r.timedOut);
  CHECK(r.exitCode == 0);
}

// The data path of the hidden case's agents: KVX_NETNS_DATA_PATH, "tcp" (UCX over tcp) unless
// the visible case set "socket" (kvx's own transport).
inline std::string dataPath() {
  const char* path = std::getenv("KVX_NETNS_DATA_PATH");
  return path != nullptr && *path != '\0' ? path : "tcp";
}

// The hidden case's view of the pair (from its environment).
inline NetnsNames pairNames() {
  const std::optional<NetnsNames> names = NetnsNames::fromEnvironment();
  if (!names) FAIL("the prefill side runs only inside its namespace, started by the visible test");
  return *names;
}

// How a decode agent started by startDecode chooses its data path's devices.
enum class DecodeDevices {
  kPinned,   // UCX_NET_DEVICES set to its veth interface
  kDefault,  // no option, no UCX_* variable: the agent's default (auto)
  kLoopback  // --net-devices lo: a misconfigured agent that peers on other hosts cannot reach
};

// A `kvx agent --role decode --verify` in the decode namespace, listening on its veth
// address, data over dataPath() on the devices `devices` says. Its stderr (debug log) goes
// to `log`.
inline DecodeProcess startDecode(const NetnsNames& n, std::uint64_t blocks, const std::string& log,
                                 DecodeDevices devices = DecodeDevices::kPinned) {
  const std::string pin = devices == DecodeDevices::kPinned ? "UCX_NET_DEVICES=\"$1\" " : "";
  const std::string option = devices == DecodeDevices::kLoopback ? "--net-devices lo " : "";
  const std::string script =
      "exec ip netns exec \"$0\" env " + pin +
      "\"$2\" agent "
      "--role decode --name decode --listen \"$3\" --blocks \"$4\" " +
      option +
      "--model \"$5\" --transport \"$6\" --verify --check-free-blocks --log-level debug 2>" + log;
  auto child = ChildProcess::spawn(
      "/bin/sh", {"-c", script, n.decodeNs, n.decodeIf, kvxBinary(), n.decodeAddress + ":0",
                  std::to_string(blocks), fault::kModel, dataPath()});
  REQUIRE(child.isOk());
  DecodeProcess decode{std::make_unique<ChildProcess>(std::move(child).value()), "decode", "", log};
  auto line = decode.process->readLine(30s);
  INFO("decode agent: " << (line.isOk() ? *line : line.status().toString()) << "; log " << log
                        << ":\n"
                        << decode.logText());
  REQUIRE(line.isOk());
  REQUIRE(line->rfind("LISTENING ", 0) == 0);
  decode.address = line->substr(10);
  return decode;
}

// The in-process prefill agent's options: listening on the prefill veth address, dataPath()
// on that interface.
inline KvAgentOptions prefillOptions(const NetnsNames& n, std::uint64_t blocks) {
  KvAgentOptions options = fault::prefillOptions("prefill", dataPath(), blocks);
  options.agent.listenAddress = n.prefillAddress + ":0";
  options.agent.ucxNetDevices = n.prefillIf;
  return options;
}

// Replaces the nftables table "kvx_fault" of the decode namespace by one dropping, on the
// decode interface, `percent` of the packets each way (numgen random); 100 is a cut.
inline void dropPackets(const NetnsNames& n, int percent, const std::string& dir) {
  const std::string match =
      percent >= 100 ? std::string() : "numgen random mod 100 < " + std::to_string(percent) + " ";
  const std::string path = dir + "/kvx_fault.nft";
  {
    std::ofstream file(path);
    file << "table inet kvx_fault\n"
         << "delete table inet kvx_fault\n"
         << "table inet kvx_fault {\n"
         << "  chain input {\n"
         << "    type filter hook input priority 0; policy accept;\n"
         << "    iifname \"" << n.decodeIf << "\" " << match << "drop\n"
         << "  }\n"
         << "  chain output {\n"
         << "    type filter hook output priority 0; policy accept;\n"
         << "    oifname \"" << n.decodeIf << "\" " << match << "drop\n"
         << "  }\n"
         << "}\n";
  }
  const CommandResult r = inNamespace(n.decodeNs, {"nft", "-f", path});
  INFO("nft -f " << path << ": " << r.output);
  REQUIRE(r.ok());
}

// Removes what dropPackets installed: the link is whole again.
inline void restoreLink(const NetnsNames& n) {
  const CommandResult r = inNamespace(n.decodeNs, {"nft", "delete", "table", "inet", "kvx_fault"});
  INFO("nft delete table inet kvx_fault: " << r.output);
  REQUIRE(r.ok());
}

// Stops the in-process prefill agent; call it before stopping the decode agents. A decode agent
// exiting while the prefill agent runs can crash it inside UCX 1.13.1 once the prefill agent
// force-closed a link during a cut (docs/reliability.md, "Peer exit after a cut-time reset").
inline void stopPrefillFirst(std::unique_ptr<KvAgent>& prefill) { prefill.reset(); }

// Checks the decode agent's account once it stopped: nothing corrupt, every block it received
// verified, every block back in its pool; returns its STATS.
inline nlohmann::json stopAndCheckDecode(DecodeProcess& decode) {
  const nlohmann::json stats = decode.stop();
  INFO("decode agent STATS " << stats.dump() << "; log " << decode.log);
  CHECK(stats["corruptBlocks"] == 0);
  CHECK(stats["lateWrites"] == 0);
  CHECK(stats["blocksVerified"] == stats["blocks"]);
  CHECK(stats["freeBlocks"] == stats["totalBlocks"]);
  const std::string log = decode.logText();
  CHECK(log.find("CORRUPT") == std::string::npos);
  CHECK(log.find("cannot verify") == std::string::npos);
  return stats;
}

// True when the decode agent verified request `id` (its arrival is in the log).
inline bool arrived(const DecodeProcess& decode, const std::string& id) {
  return decode.logText().find("arrival " + id + " ") != std::string::npos;
}

inline double millis(std::chrono::nanoseconds d) { return static_cast<double>(d.count()) / 1e6; }

// Moves one whole request of `blocks` blocks to the decode agent, requires it released by
// `deadline` (default: in 20 s) and verified there, and returns its latency in ms.
inline double moveVerified(KvAgent& prefill, const DecodeProcess& decode, const std::string& id,
                           std::uint64_t blocks, std::optional<Deadline> deadline = {}) {
  REQUIRE(prefill
              .submit(fault::makeRequest(prefill, id, blocks * fault::kTokensPerBlock, decode.name,
                                         false))
              .isOk());
  auto done = prefill.wait(id, deadline.value_or(deadlineIn(20s)));
  INFO(id << ": " << (done.isOk() ? "released" : done.status().toString()));
  REQUIRE(done.isOk());
  REQUIRE(fault::waitForLog(decode, "arrival " + id + " ", 10s));
  return millis(done->latency);
}

// Submits a layer-by-layer request `id` of 4 blocks to the decode agent and makes its first
// layer ready; requires it transferring (placed) within 10 s. Returns `id`.
inline std::string startLayerwise(KvAgent& prefill, const std::string& id) {
  REQUIRE(
      prefill.submit(fault::makeRequest(prefill, id, 4 * fault::kTokensPerBlock, "decode", true))
          .isOk());
  REQUIRE(prefill.layerReady(id, 0).isOk());
  const KvRequestStatus s =
      fault::waitState(prefill, id, KvRequestState::kTransferring, deadlineIn(10s));
  INFO(id << " is " << toString(s.state) << ": " << s.status.toString());
  REQUIRE(s.state == KvRequestState::kTransferring);
  return id;
}

// Connects again until the decode agent takes the link (it may still hold the old one until
// its own heartbeat timeout), by `deadline`; returns the attempts it took (0: never).
inline int reconnect(KvAgent& prefill, const std::string& address, Deadline deadline,
                     std::string& lastError) {
  for (int attempt = 1; Clock::now() < deadline; ++attempt) {
    auto peer = prefill.connect(address, std::min(deadline, deadlineIn(3s)));
    if (peer.isOk()) return attempt;
    lastError = peer.status().toString();
    std::this_thread::sleep_for(100ms);
  }
  return 0;
}

}  // namespace kvx::test::netns
