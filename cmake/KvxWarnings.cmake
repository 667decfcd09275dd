# Compiler warnings for the project's own targets (not for dependencies).
function(kvx_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wold-style-cast -Wcast-align -Woverloaded-virtual
                                           -Wno-missing-field-initializers)
  # Clang checks the lock annotations (sync/thread_annotations.h): every access to a
  # KVX_GUARDED_BY member under its lock, every KVX_REQUIRES met by the caller.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    target_compile_options(${target} PRIVATE -Wthread-safety)
  endif()
  if(KVX_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

if(KVX_SANITIZE)
  add_compile_options(-fsanitize=${KVX_SANITIZE} -fno-omit-frame-pointer)
  if(KVX_SANITIZE MATCHES "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # Asio's atomic_thread_fence trips GCC's -Wtsan; TSan still sees the fences' effects
    # through the atomics around them.
    add_compile_options(-Wno-tsan)
  endif()
  add_link_options(-fsanitize=${KVX_SANITIZE})
endif()

# Fuzzing: libFuzzer needs clang. Every target gets the coverage instrumentation
# (fuzzer-no-link) plus address and undefined sanitizers that abort on the first report, so a
# bug anywhere under a fuzz target is a crash libFuzzer keeps; fuzz/ links the fuzzer itself.
if(KVX_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "KVX_FUZZ needs clang (libFuzzer); configure with CXX=clang++ CC=clang")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
