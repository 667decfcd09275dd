// kvx-test-labels: unit
// The registry's parsers: etcd:// targets, agent entries (bad entries refused naming the key),
// base64 and prefix ranges as the JSON gateway wants them.
#include <catch2/catch.hpp>

#include "registry/agent_entry.h"
#include "registry/etcd_client.h"
#include "registry/etcd_target.h"

using namespace kvx;
using namespace kvx::registry;

TEST_CASE("etcd targets parse, and bad ones are named", "[registry]") {
  auto target = parseEtcdTarget("etcd://10.0.0.1:2379,[::1]:2380,localhost:7/prod-a");
  REQUIRE(target.isOk());
  REQUIRE(target->endpoints.size() == 3);
  CHECK(target->endpoints[1].host == "::1");
  CHECK(target->endpoints[2].port == 7);
  CHECK(target->agentsPrefix() == "/kvx/prod-a/agents/");
  CHECK(target->describe() == "etcd://10.0.0.1:2379,[::1]:2380,localhost:7/prod-a");
  auto secret = parseEtcdTarget("etcd://kvx:s3cret@127.0.0.1:2379/c");
  REQUIRE(secret.isOk());
  CHECK((secret->user == "kvx" && secret->password == "s3cret"));
  for (const char* url : {"http://h:1/c", "etcd://h:1", "etcd://h:0/c", "etcd://h:1/", "etcd:///c",
                          "etcd://h:1/a b", "etcd://h/c", "etcd://u@h:1/c"}) {
    INFO(url);
    CHECK(parseEtcdTarget(url).status().code() == StatusCode::kInvalidArgument);
  }
  const auto hidden = parseEtcdTarget("etcd://u:pw@h/c");
  CHECK(hidden.status().message().find("pw") == std::string::npos);
}

TEST_CASE("agent entries round-trip, and bad ones are refused naming the key", "[registry]") {
  const std::string prefix = "/kvx/c/agents/";
  AgentEntry entry{"d1", "decode", 42, "10.0.0.2:5000", "llama", 64, "host", "tcp", "auto"};
  auto parsed = parseAgentEntry(prefix, prefix + "d1", entry.toJson());
  REQUIRE(parsed.isOk());
  CHECK(parsed->incarnation == 42);
  CHECK(parsed->control == "10.0.0.2:5000");
  const std::string good = entry.toJson();
  for (const auto& [key, value, words] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {prefix + "d2", good, "claims the name 'd1'"},
           {prefix + "d1", good.substr(0, good.size() / 2), "truncated"},
           {prefix + "d1", "{\"name\":\"d1\"}", "not a kvx agent entry"},
           {"/other/d1", good, "not under"},
           {prefix + "d1", std::string(70000, 'x'), "above 64 KiB"}}) {
    auto refused = parseAgentEntry(prefix, key, value);
    INFO(refused.status().toString());
    REQUIRE(refused.status().code() == StatusCode::kInvalidArgument);
    CHECK(refused.status().message().find("registry entry '" + key) != std::string::npos);
    CHECK(refused.status().message().find(words) != std::string::npos);
  }
  AgentEntry absurd = entry;
  absurd.role = "both";
  CHECK(!parseAgentEntry(prefix, prefix + "d1", absurd.toJson()).isOk());
  absurd = entry;
  absurd.blocks = 1ull << 50;
  CHECK(!parseAgentEntry(prefix, prefix + "d1", absurd.toJson()).isOk());
}

TEST_CASE("base64 and prefix ends as the gateway takes them", "[registry]") {
  for (const std::string& text :
       std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff", 2)}) {
    auto back = fromBase64(toBase64(text));
    REQUIRE(back.isOk());
    CHECK(*back == text);
  }
  CHECK(toBase64("key") == "a2V5");
  CHECK(!fromBase64("a2V").isOk());
  CHECK(prefixEnd("/kvx/") == "/kvx0");
  CHECK(prefixEnd(std::string("a\xff", 2)) == "b");
}
