// kvx-test-labels: fault multiprocess
// Two hosts made of network namespaces joined by a veth pair, with the agents' defaults: no
// device option on either side and no UCX_* variable. The prefill agent (in-process, in one
// namespace) and a `kvx agent --role decode --verify` process (in the other) share a token,
// so each chooses every interface (agent/net_devices.h), and requests move over UCX tcp and
// over kvx's socket transport, every block verified by the decode agent. With loopback as
// the default, the UCX path was refused at once (tcp/lo unreachable) and the socket path
// published 127.0.0.1.
#include "tests/fault/netns/netns_fixture.h"

using namespace kvx;
using namespace kvx::test;
using namespace kvx::test::netns;

TEST_CASE("two hosts move requests on the agents' default devices", "[fault]") {
  const std::string dataPath = GENERATE("tcp", "socket");
  runPrefillSide("netns default devices: prefill side", {"KVX_NETNS_DATA_PATH=" + dataPath}, false);
}

TEST_CASE("netns default devices: prefill side", "[.]") {
  REQUIRE(std::getenv("UCX_NET_DEVICES") == nullptr);
  const NetnsNames n = pairNames();
  const fault::ScratchDir scratch;
  DecodeProcess decode =
      startDecode(n, 64, scratch.path() + "/decode.log", DecodeDevices::kDefault);
  INFO("decode agent log " << decode.log);
  KvAgentOptions options = prefillOptions(n, 64);
  options.agent.ucxNetDevices = AgentOptions{}.ucxNetDevices;  // the default: auto
  auto created = KvAgent::create(options);
  REQUIRE(created.isOk());
  KvAgent& p = **created;
  REQUIRE(p.connect(decode.address, deadlineIn(10s)).isOk());
  for (int i = 0; i < 5; ++i) (void)moveVerified(p, decode, "default-" + std::to_string(i), 4);
}
