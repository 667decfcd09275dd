#include "agent/channel/auth_token.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>

#include "files/bounded_file.h"

namespace kvx::agent::channel {
namespace {

void stripTrailingSpace(std::string& text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ' ||
                           text.back() == '\t')) {
    text.pop_back();
  }
}

Result<std::string> readTokenFile(const std::string& path) {
  KVX_ASSIGN_OR_RETURN(std::string token,
                       files::readBoundedFile(path, kMaxAuthTokenBytes, "auth token file"));
  stripTrailingSpace(token);
  if (token.empty()) {
    return invalidArgument("auth token file '" + path +
                           "' is empty; write a secret to it, e.g. `openssl rand -hex 32 > " +
                           path + "`");
  }
  std::error_code error;
  const std::filesystem::perms mode = std::filesystem::status(path, error).permissions();
  using std::filesystem::perms;
  if (!error && (mode & (perms::group_read | perms::others_read)) != perms::none) {
    spdlog::warn("auth token file '{}' is readable by other users; chmod 600 it", path);
  }
  return token;
}

}  // namespace

Result<std::string> resolveAuthToken(const std::string& token, const std::string& tokenFile) {
  if (!token.empty()) return token;
  if (!tokenFile.empty()) return readTokenFile(tokenFile);
  const char* fromEnvironment = std::getenv(kAuthTokenVariable);
  return std::string(fromEnvironment ? fromEnvironment : "");
}

}  // namespace kvx::agent::channel
