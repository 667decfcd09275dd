#pragma once

// JSON configuration files for CLI11 apps. A file is one JSON object whose keys are long option
// names without the dashes ({"blocks": 1024, "peers": ["127.0.0.1:7001"], "verify": true});
// values are strings, numbers, booleans or arrays of those.
//
// CLI11 2.1 (Debian 12) reads INI/TOML config files only, reads them before the environment
// (so a file would beat KVX_* variables), and only for the top-level app. So a subcommand's
// file is applied after parsing, here, to the options that neither the command line nor the
// environment set: command line > environment > file > defaults. JsonConfig is the formatter
// (CLI::Config) that turns JSON into CLI11's ConfigItems and an app's values back into JSON.

#include <CLI/CLI.hpp>
#include <cstddef>
#include <istream>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "kvx/status.h"

namespace kvx::cli {

// A config file holds a few dozen options: anything near this is not one.
inline constexpr std::size_t kMaxConfigFileBytes = 1u << 20;

class JsonConfig : public CLI::Config {
 public:
  // The values of `app`'s named options (given ones, and defaults with `defaultAlso`) as one
  // JSON object. `writeDescription` and `prefix` are ignored.
  std::string to_config(const CLI::App* app, bool defaultAlso, bool writeDescription,
                        std::string prefix) const override;
  // Throws CLI::ConfigError with the parser's message when the text is not a JSON object of
  // scalars and arrays, nests deeper than JSON from a peer may, or is larger than
  // kMaxConfigFileBytes.
  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override;
  // The items of a parsed config object (as from_config).
  std::vector<CLI::ConfigItem> itemsOf(const nlohmann::json& root) const;
};

// Gives every option of `app` that is still unset its value from the JSON file at `path`,
// validated and converted as if it were typed on the command line.
// NOT_FOUND when the file cannot be read; INVALID_ARGUMENT when it is not a regular file (a
// directory, a FIFO) or is larger than kMaxConfigFileBytes, and naming the file and key for
// bad JSON, an unknown key (listing the known ones) or a value the option refuses.
Status applyConfigFile(CLI::App& app, const std::string& path);

}  // namespace kvx::cli
