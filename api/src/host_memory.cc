#include "kvx/host_memory.h"

#include <sys/statvfs.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace kvx {
namespace {

std::string gib(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  return text;
}

}  // namespace

HostMemoryRoom readHostMemoryRoom(const HostMemoryPaths& paths) {
  HostMemoryRoom room;
  std::ifstream meminfo(paths.meminfo);
  std::string key, unit;
  std::uint64_t kib = 0;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") {
      room.available = kib * 1024;
      break;
    }
  }
  std::ifstream shmmax(paths.shmmax);
  if (std::uint64_t bytes = 0; shmmax >> bytes) room.largestSysvSegment = bytes;
  struct statvfs fs {};
  if (::statvfs(paths.sharedMemory.c_str(), &fs) == 0) {
    room.sharedMemoryFree = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
  }
  return room;
}

Status checkHostMemoryRoom(std::uint64_t bytes, const HostMemoryRoom& room,
                           std::string_view detail) {
  std::string asked = std::to_string(bytes) + " bytes (" + gib(bytes);
  if (!detail.empty()) asked += "; " + std::string(detail);
  asked += ")";
  if (room.available && bytes > *room.available) {
    return resourceExhausted(asked + " of host memory asked, but the host has " +
                             gib(*room.available) + " available (MemAvailable)");
  }
  const bool posixFile = room.largestSysvSegment && bytes > *room.largestSysvSegment;
  if (posixFile && room.sharedMemoryFree && bytes > *room.sharedMemoryFree) {
    return resourceExhausted(asked +
                             " of shared memory asked, more than a System V segment may "
                             "have (kernel.shmmax " +
                             std::to_string(*room.largestSysvSegment) + ") and more than the " +
                             gib(*room.sharedMemoryFree) + " free in /dev/shm");
  }
  return Status::ok();
}

}  // namespace kvx
