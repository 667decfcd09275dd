// kvx-test-labels: unit serial
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/agent_options.h"
#include "cli/json_config.h"
#include "tests/support/agent_config_env.h"

using namespace kvx;
using namespace kvx::cli;
using namespace kvx::daemon;

using namespace kvx::test::agent_config;

TEST_CASE("the command line sets every option", "[agent_config]") {
  CleanEnvironment env;
  auto config = parseAgentConfig({"--role",
                                  "prefill",
                                  "--name",
                                  "p0",
                                  "--listen",
                                  "127.0.0.1:7000",
                                  "--model",
                                  "qwen2.5-32b",
                                  "--layout",
                                  "hnd",
                                  "--blocks",
                                  "128",
                                  "--peer",
                                  "127.0.0.1:7001",
                                  "--peer",
                                  "127.0.0.1:7002",
                                  "--transport",
                                  "tcp",
                                  "--mode",
                                  "pull",
                                  "--lease-ms",
                                  "100",
                                  "--timeout-ms",
                                  "200",
                                  "--max-inflight-bytes",
                                  "64M",
                                  "--log-level",
                                  "debug",
                                  "--synthetic",
                                  "--requests",
                                  "7",
                                  "--layerwise",
                                  "mixed",
                                  "--report",
                                  "r.json"});
  REQUIRE(config.isOk());
  CHECK(config->role == "prefill");
  CHECK(config->name == "p0");
  CHECK(config->listen == "127.0.0.1:7000");
  CHECK(config->model == "qwen2.5-32b");
  CHECK(config->layout == "hnd");
  CHECK(config->blocks == 128);
  CHECK(config->peers == std::vector<std::string>{"127.0.0.1:7001", "127.0.0.1:7002"});
  CHECK(config->transport == "tcp");
  CHECK(config->mode == "pull");
  CHECK(config->leaseMs == 100);
  CHECK(config->timeoutMs == 200);
  CHECK(config->maxInflightBytes == 64ull << 20);
  CHECK(config->logLevel == "debug");
  CHECK(config->workload.synthetic);
  CHECK(config->workload.requests == 7);
  CHECK(config->workload.layerwise == "mixed");
  CHECK(config->report == "r.json");
}

TEST_CASE("defaults apply when nothing else is given", "[agent_config]") {
  CleanEnvironment env;
  auto config = parseAgentConfig(kDecode);
  REQUIRE(config.isOk());
  CHECK(config->listen == "127.0.0.1:0");
  CHECK(config->model == "llama3-8b");
  CHECK(config->layout == "nhd");
  CHECK(config->transport == "shm");
  CHECK(config->mode == "push");
  CHECK(config->leaseMs == 30000);
  CHECK(config->prefixCacheBlocks == 0);
  CHECK(config->logLevel == "info");
  CHECK_FALSE(config->verify);
}

TEST_CASE("the environment sets options, lists comma-separated", "[agent_config]") {
  CleanEnvironment env;
  env.set("KVX_ROLE", "prefill");
  env.set("KVX_NAME", "p-env");
  env.set("KVX_BLOCKS", "32");
  env.set("KVX_PEERS", "127.0.0.1:1,127.0.0.1:2");
  env.set("KVX_TRANSPORT", "tcp");
  env.set("KVX_PREFIX_CACHE_BLOCKS", "5");
  auto config = parseAgentConfig({});
  REQUIRE(config.isOk());
  CHECK(config->role == "prefill");
  CHECK(config->name == "p-env");
  CHECK(config->blocks == 32);
  CHECK(config->peers == std::vector<std::string>{"127.0.0.1:1", "127.0.0.1:2"});
  CHECK(config->transport == "tcp");
  CHECK(config->prefixCacheBlocks == 5);
}

TEST_CASE("precedence: command line > environment > config file > defaults", "[agent_config]") {
  CleanEnvironment env;
  TempFile file(R"({"role": "decode", "name": "from-file", "blocks": 10, "layout": "hnd",
                    "lease-ms": 111, "timeout-ms": 222, "verify": true})");
  env.set("KVX_CONFIG", file.path().c_str());
  env.set("KVX_BLOCKS", "20");
  env.set("KVX_LEASE_MS", "333");
  auto config = parseAgentConfig({"--blocks", "30"});
  REQUIRE(config.isOk());
  CHECK(config->blocks == 30);          // command line over environment and file
  CHECK(config->leaseMs == 333);        // environment over file
  CHECK(config->timeoutMs == 222);      // file over default
  CHECK(config->layout == "hnd");       // file over default
  CHECK(config->name == "from-file");   // file only
  CHECK(config->verify);                // a flag from the file
  CHECK(config->model == "llama3-8b");  // default
}

TEST_CASE("--config on the command line, and arrays for list options", "[agent_config]") {
  CleanEnvironment env;
  TempFile file(R"({"role": "prefill", "name": "p", "blocks": 8,
                    "peers": ["127.0.0.1:1", "127.0.0.1:2"], "max-inflight-bytes": "2M"})");
  auto config = parseAgentConfig({"--config", file.path()});
  REQUIRE(config.isOk());
  CHECK(config->peers == std::vector<std::string>{"127.0.0.1:1", "127.0.0.1:2"});
  CHECK(config->maxInflightBytes == 2ull << 20);
  auto overridden = parseAgentConfig({"--config", file.path(), "--peer", "127.0.0.1:9"});
  REQUIRE(overridden.isOk());
  CHECK(overridden->peers == std::vector<std::string>{"127.0.0.1:9"});
}

TEST_CASE("config file errors name the file and the key", "[agent_config]") {
  CleanEnvironment env;
  SECTION("unknown key") {
    TempFile file(R"({"role": "decode", "blokcs": 10})");
    auto config = parseAgentConfig(with(kDecode, {"--config", file.path()}));
    REQUIRE_FALSE(config.isOk());
    CHECK(config.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(config.status().message(), Catch::Contains("unknown key 'blokcs'") &&
                                              Catch::Contains(file.path()) &&
                                              Catch::Contains("blocks"));
  }
  SECTION("a value the option refuses") {
    TempFile file(R"({"transport": "carrier-pigeon"})");
    auto config = parseAgentConfig(with(kDecode, {"--config", file.path()}));
    REQUIRE_FALSE(config.isOk());
    CHECK_THAT(config.status().message(),
               Catch::Contains("key 'transport'") && Catch::Contains("carrier-pigeon"));
  }
  SECTION("not JSON") {
    TempFile file("blocks = 10");
    auto config = parseAgentConfig(with(kDecode, {"--config", file.path()}));
    REQUIRE_FALSE(config.isOk());
    CHECK_THAT(config.status().message(), Catch::Contains("not valid JSON"));
  }
  SECTION("not an object") {
    TempFile file("[1, 2]");
    auto config = parseAgentConfig(with(kDecode, {"--config", file.path()}));
    REQUIRE_FALSE(config.isOk());
    CHECK_THAT(config.status().message(), Catch::Contains("one JSON object"));
  }
  SECTION("missing file") {
    auto config = parseAgentConfig(with(kDecode, {"--config", "/nonexistent/kvx.json"}));
    REQUIRE_FALSE(config.isOk());
    CHECK(config.status().code() == StatusCode::kNotFound);
  }
  SECTION("a directory") {
    auto config = parseAgentConfig(with(kDecode, {"--config", "/tmp"}));
    REQUIRE_FALSE(config.isOk());
    CHECK(config.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(config.status().message(), Catch::Contains("'/tmp' is a directory"));
  }
  SECTION("a FIFO is refused, not waited on") {
    char dir[] = "/tmp/kvx-config-fifo-XXXXXX";
    REQUIRE(::mkdtemp(dir) != nullptr);
    const std::string fifo = std::string(dir) + "/config";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    auto config = parseAgentConfig(with(kDecode, {"--config", fifo}));
    ::unlink(fifo.c_str());
    ::rmdir(dir);
    REQUIRE_FALSE(config.isOk());
    CHECK_THAT(config.status().message(), Catch::Contains("is a FIFO, not a regular file"));
  }
  SECTION("nesting deeper than any config") {
    // 100,000 levels overflowed the parser's stack (SIGSEGV).
    std::string deep;
    for (int i = 0; i < 100000; ++i) deep += "{\"a\":";
    deep += "1";
    deep += std::string(100000, '}');
    TempFile file(deep);
    auto config = parseAgentConfig(with(kDecode, {"--config", file.path()}));
    REQUIRE_FALSE(config.isOk());
    CHECK(config.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(config.status().message(), Catch::Contains("nests deeper than"));
  }
  SECTION("larger than a config file") {
    TempFile file(R"({"role": "decode", "name": ")" + std::string(kMaxConfigFileBytes, 'x') +
                  R"("})");
    auto config = parseAgentConfig(with(kDecode, {"--config", file.path()}));
    REQUIRE_FALSE(config.isOk());
    CHECK(config.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(config.status().message(), Catch::Contains("more than the 1048576"));
  }
}

TEST_CASE("validation explains what is missing or contradictory", "[agent_config]") {
  CleanEnvironment env;
  auto fails = [](const std::vector<std::string>& args, const std::string& text) {
    auto config = parseAgentConfig(args);
    REQUIRE_FALSE(config.isOk());
    CHECK(config.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(config.status().message(), Catch::Contains(text));
  };
  fails({"--name", "x", "--blocks", "1"}, "--role is required");
  fails({"--role", "decode", "--blocks", "1"}, "--name is required");
  fails({"--role", "decode", "--name", "x"}, "--blocks is required");
  fails({"--role", "router", "--name", "x", "--blocks", "1"}, "--role");
  fails(with(kDecode, {"--listen", "7000"}), "not HOST:PORT");
  fails(with(kDecode, {"--peer", "127.0.0.1:1"}), "--peer applies to prefill");
  fails(with(kDecode, {"--synthetic"}), "prefill agents only");
  fails(with(kDecode, {"--layout", "diagonal"}), "--layout");
  fails(with(kDecode, {"--blocks", "lots"}), "--blocks");
  const std::vector<std::string> prefill{"--role",   "prefill", "--name", "p",
                                         "--blocks", "8",       "--peer", "127.0.0.1:1"};
  fails(with(prefill, {"--verify"}), "--verify applies to decode");
  fails(with(prefill, {"--check-free-blocks"}), "--check-free-blocks applies to decode");
  fails(with(kDecode, {"--check-free-blocks", "--memory", "cuda"}), "needs a host pool");
  fails(with(prefill, {"--synthetic", "--trace", "t.jsonl"}), "exclude each other");
  fails(with(prefill, {"--report", "r.json"}), "--report needs a workload");
  fails(with(prefill, {"--synthetic", "--block-order", "sorted"}), "--block-order");
  fails(with(prefill, {"--synthetic", "--min-tokens", "500", "--max-tokens", "100"}),
        "--min-tokens");
  fails(with(prefill, {"--synthetic", "--time-scale", "0"}), "--time-scale");
  fails(with(prefill, {"--synthetic", "--prefix-share", "1.5"}), "--prefix-share");
  fails({"--role", "prefill", "--name", "p", "--blocks", "8", "--synthetic"},
        "at least one --peer");
  CHECK(parseAgentConfig(with(prefill, {"--synthetic"})).isOk());
  CHECK(parseAgentConfig(with(kDecode, {"--verify"})).isOk());
}

TEST_CASE("the agent's options follow the configuration", "[agent_config]") {
  CleanEnvironment env;
  auto config = parseAgentConfig(
      with(kDecode, {"--transport", "tcp", "--listen", "127.0.0.1:7100", "--lease-ms", "50",
                     "--prefix-cache-blocks", "9", "--mode", "pull"}));
  REQUIRE(config.isOk());
  auto options = toKvAgentOptions(*config);
  REQUIRE(options.isOk());
  CHECK(options->agent.name == "d0");
  CHECK(options->agent.listenAddress == "127.0.0.1:7100");
  CHECK(options->agent.ucxTransports == "tcp");
  CHECK(options->role == KvRole::kDecode);
  CHECK(options->pool.model == "llama3-8b");
  CHECK(options->pool.blocks == 64);
  CHECK(options->leaseTimeout == std::chrono::milliseconds(50));
  CHECK(options->prefixCacheBlocks == 9);
  CHECK(options->defaultMode == KvMode::kPull);
  CHECK_FALSE(options->checkFreeBlocks);
  auto checking = parseAgentConfig(with(kDecode, {"--verify", "--check-free-blocks"}));
  REQUIRE(checking.isOk());
  auto checkingOptions = toKvAgentOptions(*checking);
  REQUIRE(checkingOptions.isOk());
  CHECK(checkingOptions->checkFreeBlocks);
}

TEST_CASE("--model reads a JSON shape file", "[agent_config]") {
  CleanEnvironment env;
  const std::string shape =
      R"({"name": "tiny", "layers": 2, "kvHeads": 1, "headDim": 64, "dtypeBytes": 2,
          "tokensPerBlock": 16, "mla": false})";
  TempFile file(shape);
  auto config = parseAgentConfig(with(kDecode, {"--model", file.path()}));
  REQUIRE(config.isOk());
  auto options = toKvAgentOptions(*config);
  REQUIRE(options.isOk());
  CHECK(options->pool.model == shape);

  auto missing = parseAgentConfig(with(kDecode, {"--model", "/nonexistent/shape.json"}));
  REQUIRE(missing.isOk());
  CHECK(toKvAgentOptions(*missing).status().code() == StatusCode::kNotFound);
}

TEST_CASE("the effective configuration prints as JSON that --config reads back", "[agent_config]") {
  CleanEnvironment env;
  CLI::App app{"kvx agent"};
  AgentConfig config;
  addAgentOptions(app, config);
  std::vector<std::string> args{"--role",   "prefill", "--name", "d9",
                                "--blocks", "77",      "--peer", "127.0.0.1:5"};
  std::reverse(args.begin(), args.end());  // CLI11 pops arguments from the back
  app.parse(args);
  REQUIRE(finishAgentConfig(app, config).isOk());
  const std::string text = configJson(app);
  const auto json = nlohmann::json::parse(text);
  CHECK(json["blocks"] == 77);
  CHECK(json["role"] == "prefill");
  CHECK(json["peer"] == nlohmann::json::array({"127.0.0.1:5"}));
  CHECK(json["layout"] == "nhd");

  TempFile file(text);
  auto reread = parseAgentConfig({"--config", file.path()});
  REQUIRE(reread.isOk());
  CHECK(reread->blocks == 77);
  CHECK(reread->name == "d9");
  CHECK(reread->peers == std::vector<std::string>{"127.0.0.1:5"});
}

TEST_CASE("tensor-parallel and benchmark options", "[agent_config]") {
  CleanEnvironment env;
  const std::vector<std::string> prefill{"--role",   "prefill", "--name",     "p1",
                                         "--blocks", "8",       "--synthetic"};
  auto config = parseAgentConfig(
      with(prefill, {"--tp-size", "4", "--tp-rank", "1", "--decode-tp", "2", "--peer",
                     "127.0.0.1:1", "--peer", "127.0.0.1:2", "--block-order", "random", "--no-fill",
                     "--request-prefix", "group-a", "--report", "p.json"}));
  REQUIRE(config.isOk());
  CHECK(config->tpSize == 4);
  CHECK(config->tpRank == 1);
  CHECK(config->decodeTp == 2);
  CHECK(config->workload.blockOrder == "random");
  CHECK(config->workload.noFill);
  CHECK(requestPrefixOf(*config) == "group-a");
  CHECK(config->report == "p.json");
  auto tp = tpPlanOf(*config);
  REQUIRE(tp.isOk());
  CHECK(tp->totalHeads == 8);
  CHECK(tp->heads().first == 2);
  CHECK(tp->heads().count == 2);
  CHECK(tp->decodeSize == 2);
  auto options = toKvAgentOptions(*config);
  REQUIRE(options.isOk());
  // The pool holds the rank's 2 of llama3-8b's 8 heads.
  auto shape = kvx::kv::shapeFromJson(options->pool.model);
  REQUIRE(shape.isOk());
  CHECK(shape->kvHeads == 2);
  CHECK(shape->layers == 32);

  SECTION("defaults: TP1, contiguous, filled, ids named after the agent") {
    auto plain = parseAgentConfig(with(prefill, {"--peer", "127.0.0.1:1"}));
    REQUIRE(plain.isOk());
    CHECK(plain->tpSize == 1);
    CHECK(plain->tpRank == 0);
    CHECK(plain->decodeTp == 1);
    CHECK(plain->workload.blockOrder == "contiguous");
    CHECK_FALSE(plain->workload.noFill);
    CHECK(requestPrefixOf(*plain) == "p1");
    CHECK(toKvAgentOptions(*plain)->pool.model == "llama3-8b");
    CHECK_FALSE(tpPlanOf(*plain)->sliced());
  }
  SECTION("a sliced replay's ids are the same on every rank") {
    config->workload.requestPrefix.clear();
    CHECK(requestPrefixOf(*config) == "prompt");
  }
  SECTION("from the environment and a config file") {
    env.set("KVX_TP_SIZE", "2");
    env.set("KVX_TP_RANK", "1");
    env.set("KVX_BLOCK_ORDER", "random");
    TempFile file(R"({"decode-tp": 4, "no-fill": true})");
    auto fromEnv =
        parseAgentConfig(with(prefill, {"--config", file.path(), "--peers", "a:1,b:2,c:3,d:4"}));
    REQUIRE(fromEnv.isOk());
    CHECK(fromEnv->tpSize == 2);
    CHECK(fromEnv->tpRank == 1);
    CHECK(fromEnv->decodeTp == 4);
    CHECK(fromEnv->workload.blockOrder == "random");
    CHECK(fromEnv->workload.noFill);
  }
  SECTION("a decode rank, with its arrivals report") {
    auto decode = parseAgentConfig(
        with(kDecode, {"--tp-size", "8", "--tp-rank", "7", "--verify", "--report", "d.json"}));
    REQUIRE(decode.isOk());
    CHECK(decode->report == "d.json");
    auto decodeTp = tpPlanOf(*decode);
    REQUIRE(decodeTp.isOk());
    CHECK(decodeTp->heads().first == 7);
    CHECK(decodeTp->heads().count == 1);
  }
}

TEST_CASE("tensor-parallel options are checked", "[agent_config]") {
  CleanEnvironment env;
  auto fails = [](const std::vector<std::string>& args, const std::string& text) {
    auto config = parseAgentConfig(args);
    REQUIRE_FALSE(config.isOk());
    CHECK(config.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(config.status().message(), Catch::Contains(text));
  };
  const std::vector<std::string> prefill{"--role",   "prefill", "--name",     "p",
                                         "--blocks", "8",       "--synthetic"};
  fails(with(kDecode, {"--tp-size", "2", "--tp-rank", "2"}), "--tp-rank 2 is not a rank");
  fails(with(kDecode, {"--tp-size", "0"}), "--tp-size must be at least 1");
  fails(with(kDecode, {"--decode-tp", "2"}), "--decode-tp applies to prefill agents");
  fails(with(kDecode, {"--no-fill"}), "--no-fill");
  fails(with(prefill, {"--decode-tp", "2", "--peer", "127.0.0.1:1"}),
        "--decode-tp 2 needs exactly 2 --peer addresses");
  fails(with(prefill, {"--tp-size", "2", "--peer", "a:1", "--peer", "b:2"}),
        "--decode-tp 1 needs exactly 1 --peer");
  fails(with(prefill, {"--decode-tp", "0", "--peer", "a:1"}), "--decode-tp must be at least 1");

  // What needs the model: sizes that do not split its heads.
  auto config = parseAgentConfig(with(prefill, {"--tp-size", "3", "--peer", "a:1"}));
  REQUIRE(config.isOk());
  CHECK_THAT(toKvAgentOptions(*config).status().message(),
             Catch::Contains("--tp-size 3 does not divide the model's 8 KV heads"));
  CHECK(tpPlanOf(*config).status().code() == StatusCode::kInvalidArgument);
  auto mla = parseAgentConfig(
      with(kDecode, {"--model", "deepseek-v3", "--tp-size", "2", "--tp-rank", "1"}));
  REQUIRE(mla.isOk());
  CHECK_THAT(toKvAgentOptions(*mla).status().message(), Catch::Contains("MLA"));
}

TEST_CASE("control channel options: token file, --insecure, liveness", "[agent_config]") {
  CleanEnvironment env;
  SECTION("defaults") {
    auto config = parseAgentConfig(kDecode);
    REQUIRE(config.isOk());
    auto options = toKvAgentOptions(*config);
    REQUIRE(options.isOk());
    CHECK(options->agent.authTokenFile.empty());
    CHECK_FALSE(options->agent.allowUnauthenticated);
    CHECK(options->agent.peerTimeout == std::chrono::milliseconds(2000));
    CHECK(options->agent.heartbeatInterval == std::chrono::milliseconds(500));
  }
  SECTION("from the command line") {
    auto config = parseAgentConfig(
        with(kDecode, {"--auth-token-file", "/run/kvx/token", "--insecure", "--peer-timeout-ms",
                       "9000", "--heartbeat-interval-ms", "1000"}));
    REQUIRE(config.isOk());
    auto options = toKvAgentOptions(*config);
    REQUIRE(options.isOk());
    CHECK(options->agent.authTokenFile == "/run/kvx/token");
    CHECK(options->agent.allowUnauthenticated);
    CHECK(options->agent.peerTimeout == std::chrono::milliseconds(9000));
    CHECK(options->agent.heartbeatInterval == std::chrono::milliseconds(1000));
  }
  SECTION("from the environment") {
    env.set("KVX_AUTH_TOKEN_FILE", "/etc/kvx.token");
    env.set("KVX_PEER_TIMEOUT_MS", "3000");
    auto config = parseAgentConfig(kDecode);
    REQUIRE(config.isOk());
    CHECK(config->authTokenFile == "/etc/kvx.token");
    CHECK(config->peerTimeoutMs == 3000);
  }
  SECTION("the heartbeat must be more frequent than the timeout") {
    auto config = parseAgentConfig(
        with(kDecode, {"--peer-timeout-ms", "500", "--heartbeat-interval-ms", "500"}));
    REQUIRE_FALSE(config.isOk());
    CHECK(config.status().code() == StatusCode::kInvalidArgument);
    CHECK_THAT(config.status().message(), Catch::Contains("--heartbeat-interval-ms 500"));
    CHECK_FALSE(parseAgentConfig(with(kDecode, {"--heartbeat-interval-ms", "5"})).isOk());
  }
}

TEST_CASE("a negative or zero --blocks is refused as such, not as a huge count", "[agent_config]") {
  CleanEnvironment env;
  for (const char* blocks : {"-1", "0"}) {
    auto config = parseAgentConfig({"--role", "decode", "--name", "d0", "--blocks", blocks});
    REQUIRE_FALSE(config.isOk());
    INFO(config.status().message());
    CHECK_THAT(config.status().message(),
               Catch::Contains("--blocks") && !Catch::Contains("18446744073709551615"));
  }
}

TEST_CASE("--data-protection takes auto, authenticated or encrypted", "[agent_config]") {
  CleanEnvironment env;
  auto config = parseAgentConfig(with(kDecode, {"--data-protection", "authenticated"}));
  REQUIRE(config.isOk());
  CHECK(config->dataProtection == "authenticated");
  auto refused = parseAgentConfig(with(kDecode, {"--data-protection", "rot13"}));
  CHECK_FALSE(refused.isOk());
}

TEST_CASE("--net-devices (KVX_NET_DEVICES) sets the data path's interfaces", "[agent_config]") {
  CleanEnvironment env;
  auto defaults = toKvAgentOptions(*parseAgentConfig(kDecode));
  REQUIRE(defaults.isOk());
  CHECK(defaults->agent.ucxNetDevices == "auto");
  auto config = parseAgentConfig(with(kDecode, {"--net-devices", "veth1"}));
  REQUIRE(config.isOk());
  auto options = toKvAgentOptions(*config);
  REQUIRE(options.isOk());
  CHECK(options->agent.ucxNetDevices == "veth1");
  ::setenv("KVX_NET_DEVICES", "eth0,eth1", 1);
  auto fromEnvironment = toKvAgentOptions(*parseAgentConfig(kDecode));
  REQUIRE(fromEnvironment.isOk());
  CHECK(fromEnvironment->agent.ucxNetDevices == "eth0,eth1");
}
