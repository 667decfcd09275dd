# Every dependency comes from Debian 12 (scripts/install-deps.sh installs them).
find_package(Threads REQUIRED)
find_package(ucx 1.13 REQUIRED CONFIG)
find_package(Boost 1.74 REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(spdlog 1.10 REQUIRED)

# The CUDA toolkit is optional: without it kvx is built for host memory only.
find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND)
  message(STATUS "kvx: CUDA toolkit ${CUDAToolkit_VERSION} found; GPU memory support compiled in")
else()
  message(STATUS "kvx: no CUDA toolkit; host memory only")
endif()
