#include "doctor/verdict.h"

#include <algorithm>

namespace kvx::doctor {
namespace {

// Each blocker's fix once, in the order the pairs first show them.
std::vector<Remedy> distinctFixes(const std::vector<PairVerdict>& pairs) {
  std::vector<Remedy> remedies;
  for (const auto& pair : pairs) {
    for (const auto& reason : pair.blockers) {
      auto it = std::find_if(remedies.begin(), remedies.end(),
                             [&](const Remedy& r) { return r.fix == reason.fix; });
      if (it == remedies.end()) {
        remedies.push_back({reason.check, reason.fix, 1, reason.what});
      } else {
        ++it->pairs;
      }
    }
  }
  return remedies;
}

}  // namespace

Verdict summarize(const SystemFacts& facts, const std::vector<PairVerdict>& pairs) {
  Verdict verdict;
  const bool gpus = !facts.gpus.gpus.empty();
  const bool nics = !facts.nics.nics.empty();
  if (!gpus && !nics) {
    verdict.summary = "no GPU visible and no RDMA device";
    verdict.meaning =
        "GPUDirect RDMA does not apply to this machine; kvx moves host memory only: shared "
        "memory on this node, TCP between nodes";
    return verdict;
  }
  if (!gpus) {
    verdict.summary = "no GPU visible";
    verdict.meaning =
        "GPUDirect RDMA does not apply; kvx moves host memory only: shared memory on this "
        "node, RDMA on host memory (or TCP) between nodes";
    return verdict;
  }
  if (!nics || pairs.empty()) {
    verdict.summary = nics ? "no RDMA device on PCI" : "no RDMA device";
    verdict.meaning =
        "GPUDirect RDMA needs an RDMA NIC: kvx moves GPU memory only by staging it through "
        "host memory and sending it over TCP or shared memory (host-memory path only)";
    return verdict;
  }

  std::size_t usable = 0;
  for (const auto& pair : pairs) usable += pair.usable() ? 1 : 0;
  verdict.usable = usable > 0;
  for (const auto& gpu : facts.gpus.gpus) {
    std::string nicsForGpu;
    for (const auto& pair : pairs) {
      if (pair.gpu == gpu.index && pair.usable()) {
        nicsForGpu += (nicsForGpu.empty() ? "" : ", ") + pair.nic;
      }
    }
    verdict.choices.push_back(
        "GPU " + std::to_string(gpu.index) + ": " +
        (nicsForGpu.empty() ? "no NIC (staged through host memory)" : nicsForGpu));
  }
  verdict.fixes = distinctFixes(pairs);
  const std::string counts =
      std::to_string(usable) + " of " + std::to_string(pairs.size()) + " GPU-NIC pairs";
  if (usable == 0) {
    verdict.summary = "GPUDirect RDMA not usable for any GPU-NIC pair";
    verdict.meaning =
        "kvx stages GPU memory through pinned host buffers (slower: every byte "
        "crosses host memory); apply the fixes below";
  } else {
    verdict.summary = "GPUDirect RDMA usable for " + counts;
    verdict.meaning =
        "give each GPU's agent a NIC it is usable with (UCX_NET_DEVICES); other "
        "pairs would stage through host memory or cross the CPU";
  }
  return verdict;
}

}  // namespace kvx::doctor
