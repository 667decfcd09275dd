#pragma once

// The transport conformance suite: the behaviour every Transport must show, whatever the
// backend. A test file instantiates it by defining kvx::test::conformanceConfig() (which
// transport, with which options; see transport_conformance_support.h) and including this
// header once. The test cases then run against two transports of that kind living in one
// process, both progressed by the test thread with a deadline. Tags: [conformance].

#include "tests/engine/transport/transport_conformance_data_cases.h"
#include "tests/engine/transport/transport_conformance_lifecycle_cases.h"
#include "tests/engine/transport/transport_conformance_wakeup_cases.h"
