# Every dependency comes from Debian 12 (scripts/install-deps.sh installs them).
find_package(Threads REQUIRED)
find_package(ucx 1.13 REQUIRED CONFIG)
find_package(Boost 1.74 REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(spdlog 1.10 REQUIRED)

# The CUDA toolkit is optional: without it kvx is built for host memory only. KVX_WITH_CUDA
# (default: whether the toolkit was found) compiles engine/gpu/cuda/ and links the CUDA runtime.
find_package(CUDAToolkit QUIET)
option(KVX_WITH_CUDA "Compile GPU memory support (needs the CUDA toolkit)" ${CUDAToolkit_FOUND})
if(KVX_WITH_CUDA AND NOT CUDAToolkit_FOUND)
  message(FATAL_ERROR "KVX_WITH_CUDA is ON but no CUDA toolkit was found: install it (nvcc on the "
                      "PATH or CUDAToolkit_ROOT) or configure with -DKVX_WITH_CUDA=OFF")
endif()
if(KVX_WITH_CUDA)
  message(STATUS "kvx: CUDA toolkit ${CUDAToolkit_VERSION} found; GPU memory support compiled in")
elseif(CUDAToolkit_FOUND)
  message(STATUS "kvx: CUDA toolkit ${CUDAToolkit_VERSION} found but KVX_WITH_CUDA=OFF; host memory only")
else()
  message(STATUS "kvx: no CUDA toolkit; host memory only")
endif()

# OpenSSL: libcrypto for HMAC-SHA256 and the CSPRNG of the control channel's authentication
# (agent/channel/auth_proof.cc), libssl for its optional TLS (agent/channel/stream/); only
# kvx_agent links them.
find_package(OpenSSL REQUIRED COMPONENTS SSL Crypto)
