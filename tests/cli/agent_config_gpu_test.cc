// kvx-test-labels: unit
// `kvx agent --memory/--device/--gpu-path`: a host pool by default, a CUDA pool on device 0
// unless told, the same options from the environment and the config file, and each mistake
// named.
#include <catch2/catch.hpp>

#include "cli/agent_options.h"
#include "tests/support/agent_config_env.h"

using namespace kvx;
using namespace kvx::cli;
using namespace kvx::daemon;
using namespace kvx::test::agent_config;

TEST_CASE("GPU memory options: --memory, --device, --gpu-path", "[agent_config]") {
  CleanEnvironment env;
  SECTION("defaults: a host pool") {
    auto config = parseAgentConfig(kDecode);
    REQUIRE(config.isOk());
    auto options = toKvAgentOptions(*config);
    REQUIRE(options.isOk());
    CHECK(options->pool.kind == MemoryKind::kHost);
    CHECK(options->pool.device == -1);
    CHECK(options->agent.gpuPath == GpuPath::kAuto);
  }
  SECTION("a CUDA pool on device 0 unless told") {
    auto config = parseAgentConfig(with(kDecode, {"--memory", "cuda", "--gpu-path", "staged"}));
    REQUIRE(config.isOk());
    auto options = toKvAgentOptions(*config);
    REQUIRE(options.isOk());
    CHECK(options->pool.kind == MemoryKind::kCuda);
    CHECK(options->pool.device == 0);
    CHECK(options->agent.gpuPath == GpuPath::kStaged);
  }
  SECTION("the command line, the environment and the file") {
    env.set("KVX_DEVICE", "3");
    env.set("KVX_GPU_PATH", "direct");
    TempFile file(R"({"memory": "cuda", "device": 1, "gpu-path": "staged"})");
    auto config = parseAgentConfig(with(kDecode, {"--config", file.path()}));
    REQUIRE(config.isOk());
    CHECK(config->memory == "cuda");
    CHECK(config->device == 3);
    CHECK(config->gpuPath == "direct");
    auto options = toKvAgentOptions(*config);
    REQUIRE(options.isOk());
    CHECK(options->pool.device == 3);
    CHECK(options->agent.gpuPath == GpuPath::kDirect);
  }
  SECTION("mistakes are named") {
    auto fails = [](const std::vector<std::string>& args, const std::string& text) {
      auto config = parseAgentConfig(args);
      REQUIRE_FALSE(config.isOk());
      CHECK(config.status().code() == StatusCode::kInvalidArgument);
      CHECK_THAT(config.status().message(), Catch::Contains(text));
    };
    fails(with(kDecode, {"--memory", "gpu"}), "--memory");
    fails(with(kDecode, {"--memory", "cuda", "--gpu-path", "rdma"}), "--gpu-path");
    fails(with(kDecode, {"--device", "1"}), "--device 1 applies to --memory cuda");
    fails(with(kDecode, {"--gpu-path", "staged"}), "--gpu-path staged applies to --memory cuda");
    fails(with(kDecode, {"--memory", "cuda", "--device=-2"}), "is not a CUDA device");
    TempFile file(R"({"memory": "cuda", "gpu-path": "sideways"})");
    fails(with(kDecode, {"--config", file.path()}), "gpu-path");
  }
}
