#pragma once

// How many assertions have failed so far in this test process (a Catch2 listener in
// catch_main.cc counts them): lets a fixture tell whether the test it served failed, e.g.
// to keep the logs of a failed run.

#include <cstddef>

namespace kvx::test {

std::size_t failedAssertions();

}  // namespace kvx::test
