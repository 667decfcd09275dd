#include "kv/pool/head_slice.h"

namespace kvx::kv {

std::string HeadSlice::toString() const {
  if (whole()) return "whole segments";
  return "heads [" + std::to_string(localFirst) + ", " + std::to_string(localFirst + count) +
         ") <-> [" + std::to_string(remoteFirst) + ", " + std::to_string(remoteFirst + count) + ")";
}

}  // namespace kvx::kv
