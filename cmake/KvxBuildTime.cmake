# What a fresh build costs. CI compiles the whole project three times on 2 cores (gcc; clang
# with address,undefined; clang with thread). The project's scripts turn on a unity build and
# choose the debug information; a plain `cmake` configure keeps CMake's defaults for both.
#   KVX_UNITY_BUILD: each target's sources compiled in batches (a CMake unity build). The
#     libraries' files share most of their headers (the standard library, nlohmann/json, fmt,
#     spdlog), so a batch parses and instantiates them once instead of once per file: the
#     libraries build about 3x faster. Every file still compiles on its own (a non-unity build
#     checks that), and names local to a file must not clash with another file's in the batch.
#   KVX_DEBUG_INFO: full (-g, as RelWithDebInfo has it), lines (line tables only: enough for
#     file:line in sanitizer reports and backtraces) or none.
option(KVX_UNITY_BUILD "Compile each target's sources in batches (CMake unity build)" OFF)
set(KVX_DEBUG_INFO "full" CACHE STRING "Debug information: full, lines or none")
set_property(CACHE KVX_DEBUG_INFO PROPERTY STRINGS full lines none)

if(KVX_UNITY_BUILD)
  set(CMAKE_UNITY_BUILD ON)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE 16)
endif()

# The option comes after the build type's -g on every command line, so it wins.
if(KVX_DEBUG_INFO STREQUAL "none")
  add_compile_options(-g0)
elseif(KVX_DEBUG_INFO STREQUAL "lines")
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    add_compile_options(-gline-tables-only)
  else()
    add_compile_options(-g1)
  endif()
elseif(NOT KVX_DEBUG_INFO STREQUAL "full")
  message(FATAL_ERROR "KVX_DEBUG_INFO must be full, lines or none, not '${KVX_DEBUG_INFO}'")
endif()

# KVX_USE_LLD: link with LLVM's lld where it is installed (scripts/install-deps.sh installs
# it). A test executable links in 0.4 s instead of GNU ld's 2.5 s, and a build links about
# 200 of them.
option(KVX_USE_LLD "Link with lld where it is installed" ON)
find_program(KVX_LLD_PROGRAM ld.lld)
if(KVX_USE_LLD AND KVX_LLD_PROGRAM)
  add_link_options(-fuse-ld=lld)
endif()
