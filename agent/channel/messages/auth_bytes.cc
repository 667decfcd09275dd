#include "agent/channel/messages/auth_bytes.h"

#include <algorithm>
#include <vector>

namespace kvx::agent::channel {

std::string authBytesToHex(const AuthBytes& bytes) {
  return jsonio::toHex(std::vector<std::uint8_t>(bytes.begin(), bytes.end()));
}

Result<AuthBytes> readAuthBytes(const jsonio::JsonReader& reader, std::string_view key) {
  KVX_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, reader.hexBytes(key, kAuthBytes));
  if (bytes.size() != kAuthBytes) {
    return jsonio::fieldError(reader.fieldPath(key),
                              std::to_string(kAuthBytes) + " bytes (" +
                                  std::to_string(2 * kAuthBytes) + " hex characters)",
                              std::to_string(bytes.size()) + " bytes");
  }
  AuthBytes result{};
  std::copy(bytes.begin(), bytes.end(), result.begin());
  return result;
}

}  // namespace kvx::agent::channel
