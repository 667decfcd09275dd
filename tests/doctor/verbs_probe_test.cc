// kvx-test-labels: unit serial
#include "doctor/verbs_probe.h"

#include <catch2/catch.hpp>

using namespace kvx;
using namespace kvx::doctor;

TEST_CASE("libibverbs answers with devices or says why not", "[doctor]") {
  auto devices = listVerbsDevices();
  if (devices.isOk()) {
    for (const auto& name : *devices) CHECK_FALSE(name.empty());
    return;
  }
  // A kernel without RDMA (this development machine) answers ENOSYS.
  CHECK_THAT(devices.status().message(), Catch::Contains("ibv_get_device_list failed"));
  const bool expected = devices.status().code() == StatusCode::kUnimplemented ||
                        devices.status().code() == StatusCode::kTransportError;
  CHECK(expected);
  if (devices.status().code() == StatusCode::kUnimplemented) {
    CHECK_THAT(devices.status().message(), Catch::Contains("no RDMA support"));
  }
}
