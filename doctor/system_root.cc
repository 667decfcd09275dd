#include "doctor/system_root.h"

#include <algorithm>
#include <system_error>

#include "files/bounded_file.h"

namespace kvx::doctor {
namespace {

std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return "";
  const auto last = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(first, last - first + 1));
}

}  // namespace

SystemRoot::SystemRoot(std::filesystem::path root) : root_(std::move(root)), real_(false) {
  std::error_code error;
  auto canonical = std::filesystem::canonical(root_, error);
  if (!error) root_ = canonical;
  real_ = root_ == std::filesystem::path("/");
}

std::filesystem::path SystemRoot::hostPath(std::string_view systemPath) const {
  while (!systemPath.empty() && systemPath.front() == '/') systemPath.remove_prefix(1);
  return root_ / std::filesystem::path(systemPath);
}

bool SystemRoot::exists(std::string_view systemPath) const {
  std::error_code error;
  return std::filesystem::exists(hostPath(systemPath), error);
}

Result<std::string> SystemRoot::readText(std::string_view systemPath) const {
  // Refuses what no probe reads (a FIFO would block, a 1 GB file fill memory), as missing.
  auto text = files::readBoundedFile(hostPath(systemPath), kMaxSystemFileBytes, "system file");
  if (!text.isOk()) return notFound(text.status().message());
  return text;
}

Result<std::string> SystemRoot::readLine(std::string_view systemPath) const {
  KVX_ASSIGN_OR_RETURN(std::string text, readText(systemPath));
  return trim(std::string_view(text).substr(0, text.find('\n')));
}

std::vector<std::string> SystemRoot::list(std::string_view systemPath) const {
  std::vector<std::string> names;
  std::error_code error;
  std::filesystem::directory_iterator it(hostPath(systemPath), error);
  if (error) return names;
  for (const auto& entry : it) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

Result<std::string> SystemRoot::resolve(std::string_view systemPath) const {
  const auto file = hostPath(systemPath);
  std::error_code error;
  const auto target = std::filesystem::canonical(file, error);
  if (error) return notFound("cannot resolve " + file.string() + ": " + error.message());
  if (real_) return target.string();
  const auto relative = target.lexically_relative(root_);
  if (relative.empty() || *relative.begin() == "..") {
    return notFound(file.string() + " leads to " + target.string() + ", outside the root " +
                    root_.string() + ": fixture symlinks must be relative and stay in the tree");
  }
  return "/" + relative.string();
}

}  // namespace kvx::doctor
