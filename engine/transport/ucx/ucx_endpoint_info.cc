#include "engine/transport/ucx/ucx_endpoint_info.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace kvx::engine::ucx {
namespace {

// "tcp/lo.0" -> "tcp/lo": the suffix after the last '.' is UCX's path index.
std::string_view stripPathIndex(std::string_view resource) {
  const std::size_t dot = resource.rfind('.');
  if (dot == std::string_view::npos || dot + 1 == resource.size()) return resource;
  const std::string_view suffix = resource.substr(dot + 1);
  const bool digits = std::all_of(suffix.begin(), suffix.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
  return digits ? resource.substr(0, dot) : resource;
}

}  // namespace

std::string summarizeLanes(std::string_view printInfo) {
  std::vector<std::string> lanes;
  std::size_t pos = 0;
  while ((pos = printInfo.find("lane[", pos)) != std::string_view::npos) {
    const std::size_t colon = printInfo.find("]:", pos);
    if (colon == std::string_view::npos) break;
    pos = colon + 2;
    // Skip blanks and the resource index ("  0:") before "tl/dev.path".
    while (pos < printInfo.size() && printInfo[pos] == ' ') ++pos;
    while (pos < printInfo.size() && std::isdigit(static_cast<unsigned char>(printInfo[pos]))) {
      ++pos;
    }
    if (pos < printInfo.size() && printInfo[pos] == ':') ++pos;
    const std::size_t end = printInfo.find_first_of(" \t\n", pos);
    std::string_view resource =
        printInfo.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    if (resource.find('/') == std::string_view::npos) continue;
    std::string lane(stripPathIndex(resource));
    if (std::find(lanes.begin(), lanes.end(), lane) == lanes.end()) lanes.push_back(lane);
  }
  if (lanes.empty()) return "unknown";
  std::string summary;
  for (const std::string& lane : lanes) summary += (summary.empty() ? "" : ", ") + lane;
  return summary;
}

bool lanesLetPeerWriteDirectly(std::string_view summary) {
  static constexpr std::string_view kDirect[] = {"posix", "sysv",     "xpmem",   "cma",
                                                 "knem",  "cuda_ipc", "rocm_ipc"};
  if (summary.empty() || summary == "unknown") return true;
  std::size_t pos = 0;
  while (pos < summary.size()) {
    std::size_t end = summary.find(", ", pos);
    if (end == std::string_view::npos) end = summary.size();
    const std::string_view lane = summary.substr(pos, end - pos);
    const std::string_view transport = lane.substr(0, lane.find('/'));
    if (std::find(std::begin(kDirect), std::end(kDirect), transport) != std::end(kDirect)) {
      return true;
    }
    pos = end + 2;
  }
  return false;
}

std::string describeEndpoint(ucp_ep_h ep) {
  char* buffer = nullptr;
  std::size_t size = 0;
  FILE* stream = open_memstream(&buffer, &size);
  if (stream == nullptr) return "unknown";
  ucp_ep_print_info(ep, stream);
  std::fclose(stream);
  std::string summary = summarizeLanes(std::string_view(buffer, size));
  std::free(buffer);
  return summary;
}

}  // namespace kvx::engine::ucx
