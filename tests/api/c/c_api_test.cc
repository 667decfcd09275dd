// kvx-test-labels: ucx
// The C API (kvx/kvx.h), called as a C program would: two agents in this process connect
// over the control channel and move bytes both ways through prepared lists (over UCX shared
// memory, UCX tcp and kvx's socket transport), every byte compared; a notification follows
// the data; bad input (NULL, unknown ids, indices out of range, an unknown data path) gets a
// status and a message and leaves the agents working.
#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "kvx/kvx.h"

namespace {

constexpr std::size_t kBlock = 64 * 1024;
constexpr std::size_t kBlocks = 8;

// An agent made through the C API, destroyed with the test.
struct CAgent {
  CAgent(const char* name, const std::string& dataPath) {
    kvx_agent_config config;
    kvx_agent_config_init(&config);
    config.name = name;
    config.data_path = dataPath.c_str();
    const kvx_status made = kvx_agent_create(&config, &agent);
    INFO(kvx_last_error());
    REQUIRE(made == KVX_OK);
    REQUIRE(agent != nullptr);
  }
  ~CAgent() { kvx_agent_destroy(&agent); }
  CAgent(const CAgent&) = delete;
  CAgent& operator=(const CAgent&) = delete;

  std::string address() const {
    char* text = nullptr;
    REQUIRE(kvx_agent_listen_address(agent, &text) == KVX_OK);
    std::string copy(text);
    kvx_free(text);
    return copy;
  }

  kvx_agent* agent = nullptr;
};

std::string lastError() { return kvx_last_error(); }

// Fills `bytes` with a pattern that differs per block and per seed.
void fill(std::vector<std::uint8_t>& bytes, std::uint8_t seed) {
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<std::uint8_t>(seed + i / kBlock * 31 + i % 251);
  }
}

}  // namespace

TEST_CASE("C API: two agents move blocks both ways through prepared lists", "[c_api]") {
  const std::string dataPath = GENERATE("shm", "tcp", "socket");
  INFO("data path " << dataPath);
  // Registered memory outlives its agents (the agents deregister it as they go).
  std::vector<std::uint8_t> source(kBlocks * kBlock);
  std::vector<std::uint8_t> target(kBlocks * kBlock, 0);
  fill(source, 7);
  CAgent prefill("c-prefill", dataPath);
  CAgent decode("c-decode", dataPath);

  kvx_region_id sourceRegion = 0;
  kvx_region_id targetRegion = 0;
  REQUIRE(kvx_register_memory(prefill.agent, "kv.src", source.data(), source.size(),
                              KVX_MEMORY_HOST, -1, 1, &sourceRegion) == KVX_OK);
  REQUIRE(kvx_register_memory(decode.agent, "kv.dst", target.data(), target.size(), KVX_MEMORY_HOST,
                              -1, 1, &targetRegion) == KVX_OK);
  CHECK(sourceRegion != 0);

  char* peer = nullptr;
  const kvx_status connected = kvx_connect(prefill.agent, decode.address().c_str(), 10000, &peer);
  INFO(lastError());
  REQUIRE(connected == KVX_OK);
  CHECK(std::string(peer) == "c-decode");
  kvx_free(peer);

  kvx_region_id remoteRegion = 0;
  REQUIRE(kvx_peer_region(prefill.agent, "c-decode", "kv.dst", &remoteRegion) == KVX_OK);
  CHECK(kvx_peer_region(prefill.agent, "c-decode", "kv.nope", &remoteRegion) == KVX_NOT_FOUND);
  CHECK_THAT(lastError(), Catch::Contains("kv.nope"));

  std::vector<kvx_range> local;
  std::vector<kvx_range> remote;
  for (std::size_t b = 0; b < kBlocks; ++b) {
    local.push_back({sourceRegion, b * kBlock, kBlock});
    remote.push_back({remoteRegion, b * kBlock, kBlock});
  }
  kvx_list_id localList = 0;
  kvx_list_id remoteList = 0;
  REQUIRE(kvx_prepare_local_list(prefill.agent, local.data(), local.size(), &localList) == KVX_OK);
  REQUIRE(kvx_prepare_remote_list(prefill.agent, "c-decode", remote.data(), remote.size(),
                                  &remoteList) == KVX_OK);

  SECTION("a push, blocks reversed, with a notification after the data") {
    std::vector<std::uint32_t> from;
    std::vector<std::uint32_t> to;
    for (std::uint32_t b = 0; b < kBlocks; ++b) {
      from.push_back(b);
      to.push_back(static_cast<std::uint32_t>(kBlocks - 1 - b));
    }
    const char note[] = "request-7 done";
    kvx_transfer_id transfer = 0;
    REQUIRE(kvx_make_transfer(prefill.agent, KVX_WRITE, localList, from.data(), remoteList,
                              to.data(), from.size(), note, sizeof(note) - 1, &transfer) == KVX_OK);
    kvx_transfer_state state = KVX_TRANSFER_PENDING;
    REQUIRE(kvx_poll(prefill.agent, transfer, &state, nullptr) == KVX_OK);
    CHECK(state == KVX_TRANSFER_IDLE);
    REQUIRE(kvx_post(prefill.agent, transfer) == KVX_OK);
    const kvx_status waited = kvx_wait(prefill.agent, transfer, 10000);
    INFO(lastError());
    REQUIRE(waited == KVX_OK);
    kvx_status failure = KVX_INTERNAL;
    REQUIRE(kvx_poll(prefill.agent, transfer, &state, &failure) == KVX_OK);
    CHECK(state == KVX_TRANSFER_DONE);
    CHECK(failure == KVX_OK);

    char* from_peer = nullptr;
    std::uint8_t* payload = nullptr;
    std::size_t length = 0;
    const kvx_status took =
        kvx_take_notification(decode.agent, 10000, &from_peer, &payload, &length);
    INFO(lastError());
    REQUIRE(took == KVX_OK);
    CHECK(std::string(from_peer) == "c-prefill");
    CHECK(std::string(reinterpret_cast<char*>(payload), length) == "request-7 done");
    kvx_free(from_peer);
    kvx_free(payload);
    // The data was in place before the notification came.
    for (std::size_t b = 0; b < kBlocks; ++b) {
      INFO("block " << b);
      CHECK(std::memcmp(target.data() + (kBlocks - 1 - b) * kBlock, source.data() + b * kBlock,
                        kBlock) == 0);
    }
    CHECK(kvx_release_transfer(prefill.agent, transfer) == KVX_OK);
    CHECK(kvx_post(prefill.agent, transfer) == KVX_NOT_FOUND);
  }

  SECTION("a pull of every other block") {
    fill(target, 99);
    std::vector<std::uint8_t> before = source;
    const std::uint32_t indices[] = {0, 2, 4, 6};
    kvx_transfer_id transfer = 0;
    REQUIRE(kvx_make_transfer(prefill.agent, KVX_READ, localList, indices, remoteList, indices, 4,
                              nullptr, 0, &transfer) == KVX_OK);
    REQUIRE(kvx_post(prefill.agent, transfer) == KVX_OK);
    const kvx_status waited = kvx_wait(prefill.agent, transfer, 10000);
    INFO(lastError());
    REQUIRE(waited == KVX_OK);
    for (std::size_t b = 0; b < kBlocks; ++b) {
      INFO("block " << b);
      const std::uint8_t* expected = (b % 2 == 0 ? target.data() : before.data()) + b * kBlock;
      CHECK(std::memcmp(source.data() + b * kBlock, expected, kBlock) == 0);
    }
  }

  SECTION("bad input gets a status and a message, and the agents go on") {
    const std::uint32_t good[] = {0};
    const std::uint32_t outOfRange[] = {static_cast<std::uint32_t>(kBlocks)};
    kvx_transfer_id transfer = 0;
    CHECK(kvx_make_transfer(prefill.agent, KVX_WRITE, localList, good, remoteList, outOfRange, 1,
                            nullptr, 0, &transfer) == KVX_INVALID_ARGUMENT);
    CHECK_FALSE(lastError().empty());
    CHECK(kvx_make_transfer(prefill.agent, KVX_WRITE, localList + 1000, good, remoteList, good, 1,
                            nullptr, 0, &transfer) == KVX_NOT_FOUND);
    CHECK(kvx_make_transfer(prefill.agent, static_cast<kvx_transfer_op>(9), localList, good,
                            remoteList, good, 1, nullptr, 0, &transfer) == KVX_INVALID_ARGUMENT);
    CHECK_THAT(lastError(), Catch::Contains("neither KVX_READ nor KVX_WRITE"));
    CHECK(kvx_make_transfer(prefill.agent, KVX_WRITE, localList, nullptr, remoteList, good, 1,
                            nullptr, 0, &transfer) == KVX_INVALID_ARGUMENT);
    CHECK_THAT(lastError(), Catch::Contains("local_indices"));
    CHECK(kvx_post(nullptr, 1) == KVX_INVALID_ARGUMENT);
    CHECK(kvx_wait(prefill.agent, 424242, 10) == KVX_NOT_FOUND);
    kvx_transfer_state state = KVX_TRANSFER_IDLE;
    kvx_status failure = KVX_OK;
    CHECK(kvx_poll(prefill.agent, 424242, &state, &failure) == KVX_OK);
    CHECK(state == KVX_TRANSFER_FAILED);
    CHECK(failure == KVX_NOT_FOUND);
    CHECK(kvx_cancel(prefill.agent, 424242) == KVX_NOT_FOUND);
    CHECK(kvx_deregister_memory(prefill.agent, 777) == KVX_NOT_FOUND);
    CHECK(kvx_release_list(prefill.agent, 777) == KVX_NOT_FOUND);
    CHECK(kvx_send_notification(prefill.agent, "nobody", "x", 1) == KVX_NOT_FOUND);
    CHECK(kvx_load_peer_metadata(prefill.agent, reinterpret_cast<const std::uint8_t*>("junk"), 4,
                                 nullptr) != KVX_OK);
    char* peerName = nullptr;
    std::uint8_t* payload = nullptr;
    std::size_t length = 0;
    CHECK(kvx_take_notification(decode.agent, 0, &peerName, &payload, &length) == KVX_TIMED_OUT);
    CHECK(kvx_status_name(KVX_PEER_FAILED) == std::string("PEER_FAILED"));
    // 15: inside the enum's range of values (0-15), but no code of it.
    CHECK(kvx_status_name(static_cast<kvx_status>(15)) == std::string("UNKNOWN"));

    // Still working: one block moves.
    REQUIRE(kvx_make_transfer(prefill.agent, KVX_WRITE, localList, good, remoteList, good, 1,
                              nullptr, 0, &transfer) == KVX_OK);
    REQUIRE(kvx_post(prefill.agent, transfer) == KVX_OK);
    CHECK(kvx_wait(prefill.agent, transfer, 10000) == KVX_OK);
    CHECK(std::memcmp(target.data(), source.data(), kBlock) == 0);
  }

  CHECK(kvx_release_list(prefill.agent, localList) == KVX_OK);
  CHECK(kvx_release_list(prefill.agent, remoteList) == KVX_OK);
}

TEST_CASE("C API: metadata blobs connect agents without a control channel", "[c_api]") {
  std::vector<std::uint8_t> bytes(kBlock, 0x11);  // outlives the agents
  CAgent a("c-blob-a", "shm");
  CAgent b("c-blob-b", "shm");
  kvx_region_id region = 0;
  REQUIRE(kvx_register_memory(b.agent, "kv", bytes.data(), bytes.size(), KVX_MEMORY_HOST, -1, 1,
                              &region) == KVX_OK);
  std::uint8_t* blob = nullptr;
  std::size_t length = 0;
  REQUIRE(kvx_export_metadata(b.agent, &blob, &length) == KVX_OK);
  CHECK(length > 0);
  char* name = nullptr;
  const kvx_status loaded = kvx_load_peer_metadata(a.agent, blob, length, &name);
  INFO(lastError());
  REQUIRE(loaded == KVX_OK);
  CHECK(std::string(name) == "c-blob-b");
  kvx_free(name);
  kvx_free(blob);
  kvx_region_id remote = 0;
  CHECK(kvx_peer_region(a.agent, "c-blob-b", "kv", &remote) == KVX_OK);
  CHECK(kvx_disconnect(a.agent, "c-blob-b") == KVX_OK);
  CHECK(kvx_peer_region(a.agent, "c-blob-b", "kv", &remote) == KVX_NOT_FOUND);
}

TEST_CASE("C API: agents that cannot be made say why", "[c_api]") {
  kvx_agent_config config;
  kvx_agent_config_init(&config);
  kvx_agent* agent = reinterpret_cast<kvx_agent*>(0x1);
  CHECK(kvx_agent_create(&config, &agent) == KVX_INVALID_ARGUMENT);
  CHECK(agent == nullptr);
  CHECK_THAT(lastError(), Catch::Contains("name"));
  config.name = "c-bad";
  config.data_path = "carrier-pigeon";
  CHECK(kvx_agent_create(&config, &agent) == KVX_INVALID_ARGUMENT);
  CHECK_THAT(lastError(), Catch::Contains("carrier-pigeon"));
  CHECK(kvx_agent_create(nullptr, &agent) == KVX_INVALID_ARGUMENT);
  kvx_agent_destroy(nullptr);
  kvx_agent_destroy(&agent);  // NULL inside: nothing
}

TEST_CASE("C API: one agent's ids are NOT_FOUND at another", "[c_api]") {
  std::vector<std::uint8_t> bytes(kBlock), other(kBlock);
  CAgent a("c-ids-a", "shm");
  CAgent b("c-ids-b", "shm");
  kvx_region_id regionA = 0, regionB = 0;
  REQUIRE(kvx_register_memory(a.agent, "kv", bytes.data(), bytes.size(), KVX_MEMORY_HOST, -1, 1,
                              &regionA) == KVX_OK);
  REQUIRE(kvx_register_memory(b.agent, "kv", other.data(), other.size(), KVX_MEMORY_HOST, -1, 1,
                              &regionB) == KVX_OK);
  CHECK(regionA != regionB);  // unique in the process, not counted per agent
  const kvx_range rangeA{regionA, 0, kBlock};
  const kvx_range rangeB{regionB, 0, kBlock};
  kvx_list_id listA = 0, listB = 0;
  REQUIRE(kvx_prepare_local_list(a.agent, &rangeA, 1, &listA) == KVX_OK);
  REQUIRE(kvx_prepare_local_list(b.agent, &rangeB, 1, &listB) == KVX_OK);
  CHECK(listA != listB);
  // b's ids at a: NOT_FOUND, and a's own list and region are untouched.
  CHECK(kvx_release_list(a.agent, listB) == KVX_NOT_FOUND);
  CHECK(kvx_deregister_memory(a.agent, regionB) == KVX_NOT_FOUND);
  CHECK(kvx_release_list(a.agent, listA) == KVX_OK);
  CHECK(kvx_deregister_memory(a.agent, regionA) == KVX_OK);
  CHECK(kvx_release_list(b.agent, listB) == KVX_OK);
  CHECK(kvx_deregister_memory(b.agent, regionB) == KVX_OK);
}

TEST_CASE("C API: a list longer than 32-bit indices reach is INVALID_ARGUMENT, not INTERNAL",
          "[c_api]") {
  std::vector<std::uint8_t> bytes(kBlock);
  CAgent a("c-count", "shm");
  kvx_region_id region = 0;
  REQUIRE(kvx_register_memory(a.agent, "kv", bytes.data(), bytes.size(), KVX_MEMORY_HOST, -1, 1,
                              &region) == KVX_OK);
  const kvx_range range{region, 0, kBlock};
  kvx_list_id list = 0;
  for (const size_t count : {SIZE_MAX, size_t{UINT32_MAX} + 1}) {
    CHECK(kvx_prepare_local_list(a.agent, &range, count, &list) == KVX_INVALID_ARGUMENT);
    CHECK(std::string(kvx_last_error()).find("more ranges than a list can hold") !=
          std::string::npos);
    CHECK(kvx_prepare_remote_list(a.agent, "nobody", &range, count, &list) == KVX_INVALID_ARGUMENT);
  }
  CHECK(kvx_deregister_memory(a.agent, region) == KVX_OK);
}
