#include "cli/json_config.h"

#include <nlohmann/json.hpp>

#include "files/bounded_file.h"
#include "json/json_reader.h"

namespace kvx::cli {
namespace {

// The JSON object of a config file's text; CLI::ConversionError with the reason otherwise.
// Nesting is bounded before parsing (a deep file would overflow the parser's stack).
nlohmann::json parseConfigText(const std::string& text) {
  auto parsed = jsonio::parseJson(text, "the file");
  if (!parsed.isOk()) throw CLI::ConversionError(parsed.status().message());
  if (!parsed->is_object()) {
    throw CLI::ConversionError("the file must hold one JSON object, not " +
                               std::string(parsed->type_name()));
  }
  return std::move(parsed).value();
}

std::string scalarText(const nlohmann::json& value, const std::string& key) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number()) return value.dump();
  throw CLI::ConversionError("config key '" + key + "' must be a string, number or boolean, not " +
                             value.dump());
}

// An option's value for to_config: a number or boolean where the text is one.
nlohmann::json typedValue(const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  auto parsed = nlohmann::json::parse(text, nullptr, false);
  if (!parsed.is_discarded() && parsed.is_number()) return parsed;
  return text;
}

bool isConfigKey(const CLI::App& app, const CLI::Option* option) {
  return !option->get_lnames().empty() && option->get_configurable() &&
         option != app.get_help_ptr() && option != app.get_help_all_ptr();
}

std::string knownKeys(const CLI::App& app) {
  std::string keys;
  for (const CLI::Option* option : app.get_options()) {
    if (!isConfigKey(app, option)) continue;
    if (!keys.empty()) keys += ", ";
    keys += option->get_lnames().front();
  }
  return keys;
}

}  // namespace

std::string JsonConfig::to_config(const CLI::App* app, bool defaultAlso, bool /*writeDescription*/,
                                  std::string /*prefix*/) const {
  nlohmann::json out = nlohmann::json::object();
  for (const CLI::Option* option : app->get_options()) {
    if (!isConfigKey(*app, option)) continue;
    std::vector<std::string> values = option->results();
    if (values.empty() && defaultAlso && !option->get_default_str().empty()) {
      values.push_back(option->get_default_str());
    }
    if (values.empty()) continue;
    const std::string& key = option->get_lnames().front();
    if (option->get_items_expected_max() > 1) {
      nlohmann::json array = nlohmann::json::array();
      for (const auto& value : values) array.push_back(typedValue(value));
      out[key] = std::move(array);
    } else {
      out[key] = typedValue(values.back());
    }
  }
  return out.dump(2) + "\n";
}

std::vector<CLI::ConfigItem> JsonConfig::from_config(std::istream& input) const {
  // At most one byte past the bound: enough to tell a file that is too large.
  std::string text(kMaxConfigFileBytes + 1, '\0');
  try {
    input.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(input.gcount()));
  } catch (const std::exception& e) {
    throw CLI::ConversionError(std::string("cannot be read: ") + e.what());
  }
  if (text.size() > kMaxConfigFileBytes) {
    throw CLI::ConversionError("holds more than the " + std::to_string(kMaxConfigFileBytes) +
                               " bytes a config file may have");
  }
  return itemsOf(parseConfigText(text));
}

std::vector<CLI::ConfigItem> JsonConfig::itemsOf(const nlohmann::json& root) const {
  std::vector<CLI::ConfigItem> result;
  for (const auto& [key, value] : root.items()) {
    CLI::ConfigItem item;
    item.name = key;
    if (value.is_array()) {
      for (const auto& element : value) item.inputs.push_back(scalarText(element, key));
    } else {
      item.inputs.push_back(scalarText(value, key));
    }
    result.push_back(std::move(item));
  }
  return result;
}

Status applyConfigFile(CLI::App& app, const std::string& path) {
  auto text = files::readBoundedFile(path, kMaxConfigFileBytes, "config file");
  if (!text.isOk()) {
    return Status(text.status().code(),
                  text.status().message() + "; check the path given to --config or KVX_CONFIG");
  }
  std::vector<CLI::ConfigItem> items;
  try {
    items = JsonConfig().itemsOf(parseConfigText(*text));
  } catch (const CLI::Error& e) {
    return invalidArgument("config file '" + path + "': " + e.what());
  }
  for (const CLI::ConfigItem& item : items) {
    CLI::Option* option = app.get_option_no_throw("--" + item.name);
    if (option == nullptr || !isConfigKey(app, option)) {
      return invalidArgument("config file '" + path + "': unknown key '" + item.name +
                             "'; known keys: " + knownKeys(app));
    }
    if (option->count() > 0) continue;  // the command line or the environment set it
    try {
      if (option->get_expected_min() == 0) {  // a flag: "true"/"false"
        option->add_result(option->get_flag_value(item.name, JsonConfig().to_flag(item)));
      } else {
        option->add_result(item.inputs);
      }
      option->run_callback();
    } catch (const CLI::Error& e) {
      return invalidArgument("config file '" + path + "', key '" + item.name + "': " + e.what());
    }
  }
  return Status::ok();
}

}  // namespace kvx::cli
