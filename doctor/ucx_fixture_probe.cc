// The fixture UCX probe: facts from a JSON file (doctor/ucx_probe.h has the format).
#include <fstream>
#include <nlohmann/json.hpp>

#include "doctor/ucx_probe.h"

namespace kvx::doctor {
namespace {

class UcxFixtureProbe final : public UcxProbe {
 public:
  explicit UcxFixtureProbe(std::filesystem::path file) : file_(std::move(file)) {}

  Result<UcxFacts> probe() const override {
    std::ifstream in(file_);
    if (!in) return notFound("cannot read the UCX fixture " + file_.string());
    const auto json = nlohmann::json::parse(in, nullptr, false);
    if (json.is_discarded() || !json.is_object()) {
      return invalidArgument(file_.string() + " is not a JSON object");
    }
    UcxFacts facts;
    facts.source = file_.string();
    if (!json.contains("version") || !json["version"].is_string()) {
      return invalidArgument(file_.string() + ": 'version' must be a string such as \"1.16.0\"");
    }
    facts.version = json["version"].get<std::string>();
    KVX_RETURN_IF_ERROR(readStrings(json, "memoryTypes", facts.memoryTypes));
    KVX_RETURN_IF_ERROR(readStrings(json, "components", facts.components));
    KVX_RETURN_IF_ERROR(readStrings(json, "transports", facts.transports));
    return facts;
  }

 private:
  // A missing list is empty; anything but an array of strings is an error.
  Status readStrings(const nlohmann::json& json, const char* key,
                     std::vector<std::string>& out) const {
    if (!json.contains(key)) return Status::ok();
    const auto& list = json[key];
    if (!list.is_array()) return invalidArgument(file_.string() + ": '" + key + "' must be a list");
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (!list[i].is_string()) {
        return invalidArgument(file_.string() + ": '" + key + "'[" + std::to_string(i) +
                               "] must be a string");
      }
      out.push_back(list[i].get<std::string>());
    }
    return Status::ok();
  }

  std::filesystem::path file_;
};

}  // namespace

std::unique_ptr<UcxProbe> makeUcxFixtureProbe(std::filesystem::path jsonFile) {
  return std::make_unique<UcxFixtureProbe>(std::move(jsonFile));
}

}  // namespace kvx::doctor
