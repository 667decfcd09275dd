// kvx-test-labels: fault multiprocess slow
// A decode agent on another host whose data path others cannot reach: two network-namespace
// hosts, the decode agent started with `--net-devices lo` (so its data path is on loopback
// only, and it publishes 127.0.0.1), the prefill agent on its veth interface. The control
// channel connects (it listens on the veth address); the data path cannot. The prefill
// agent's requests to that decode agent must fail within the connect deadline plus a second,
// not hang, with a Status that names the decode agent's data-path address and says why it
// cannot be reached; the blocks come back to the prefill agent's pool. Over kvx's socket
// transport and over UCX tcp.
// Labeled slow, out of CI, while it fails now and then: the prefill agent dials the decode
// agent again, the control link comes back, the data path fails once more, and a request
// submitted in between stays queued (its notification "not sent") instead of failing.
// Run it: cd build && ctest -L slow -R netns_unreachable --repeat until-fail:5
#include "tests/fault/netns/netns_fixture.h"

using namespace kvx;
using namespace kvx::test;
using namespace kvx::test::netns;

TEST_CASE("a decode agent whose data path is on loopback fails requests, naming it", "[fault]") {
  const std::string dataPath = GENERATE("tcp", "socket");
  runPrefillSide("netns unreachable data path: prefill side", {"KVX_NETNS_DATA_PATH=" + dataPath},
                 false);
}

TEST_CASE("netns unreachable data path: prefill side", "[.]") {
  const NetnsNames n = pairNames();
  const fault::ScratchDir scratch;
  DecodeProcess decode =
      startDecode(n, 64, scratch.path() + "/decode.log", DecodeDevices::kLoopback);
  INFO("decode agent log " << decode.log);
  auto created = KvAgent::create(prefillOptions(n, 64));
  REQUIRE(created.isOk());
  KvAgent& p = **created;
  const auto start = Clock::now();
  const auto connected = p.connect(decode.address, deadlineIn(10s));
  std::string failure;
  if (!connected.isOk()) {
    failure =
        connected.status().toString();  // refused while connecting: as good as failing a request
  } else {
    REQUIRE(
        p.submit(fault::makeRequest(p, "unreachable", 4 * fault::kTokensPerBlock, "decode", false))
            .isOk());
    auto done = p.wait("unreachable", start + AgentOptions{}.connectTimeout + 5s);
    auto state = p.status("unreachable");
    REQUIRE(state.isOk());
    INFO("request ended " << toString(state->state) << ": " << done.status().toString());
    REQUIRE(state->state == KvRequestState::kFailed);
    failure = done.status().toString();
  }
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  std::printf("%s data path: failed after %lld ms: %s\n", dataPath().c_str(),
              static_cast<long long>(took.count()), failure.c_str());
  std::fflush(stdout);
  CHECK(took <= AgentOptions{}.connectTimeout + 1s);
  if (dataPath() == "socket") {
    CHECK(failure.find("127.0.0.1") != std::string::npos);
    CHECK(failure.find("loopback addresses only") != std::string::npos);
  } else {
    CHECK(failure.find("Destination is unreachable") != std::string::npos);
  }
  CHECK(failure.find("net devices") != std::string::npos);
  CHECK(fault::waitPoolFree(p, deadlineIn(5s)));
}
