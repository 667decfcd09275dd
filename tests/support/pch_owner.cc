// The target that owns the tests' precompiled Catch2 header (tests/CMakeLists.txt): built,
// never run. It holds no test; kvx_test_main supplies main().
#include <catch2/catch.hpp>
