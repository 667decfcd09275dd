// kvx-test-labels: unit
// libkvx.so exports the public API and nothing else: every C function that kvx/kvx.h
// declares and no other kvx_ symbol; C++ symbols only of namespace kvx itself (the public
// headers' classes and functions), none of kvx's own namespaces (kvx::engine::...,
// kvx::agent::...) or implementation classes (...::Impl::...), and nothing of anyone else
// (the standard library's templates instantiated inside kvx, Asio, nlohmann-json, fmt).
// It also carries a SONAME. Reads the library with nm and readelf (binutils).
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

std::vector<std::string> commandLines(const std::string& command) {
  std::vector<std::string> lines;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  std::string line;
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) {
    line += buffer;
    if (!line.empty() && line.back() == '\n') {
      line.pop_back();
      lines.push_back(line);
      line.clear();
    }
  }
  if (!line.empty()) lines.push_back(line);
  REQUIRE(::pclose(pipe) == 0);
  return lines;
}

// The names of the functions kvx/kvx.h declares.
std::set<std::string> declaredCFunctions(const std::string& header) {
  std::ifstream in(header);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  std::set<std::string> names;
  const std::string source = text.str();
  const std::regex declaration(R"(KVX_C_API[^;]*?\b(kvx_[a-z_]+)\s*\()");
  for (auto it = std::sregex_iterator(source.begin(), source.end(), declaration);
       it != std::sregex_iterator(); ++it) {
    names.insert((*it)[1]);
  }
  return names;
}

}  // namespace

TEST_CASE("libkvx.so exports the public API only", "[shared_library]") {
  const std::string library = env("KVX_SHARED_LIBRARY");
  const std::string header = env("KVX_C_HEADER");
  if (library.empty() || header.empty()) {
    FAIL("KVX_SHARED_LIBRARY and KVX_C_HEADER must name libkvx.so and kvx/kvx.h (set by CTest)");
  }
  const std::set<std::string> declared = declaredCFunctions(header);
  REQUIRE(declared.size() >= 20);

  std::set<std::string> exportedC;
  std::vector<std::string> foreign;  // symbols that are not kvx's public API
  std::size_t cxx = 0;
  // Demangled, defined dynamic symbols: "ADDRESS TYPE NAME[@@VERSION]".
  for (const std::string& line : commandLines("nm -D --defined-only -C '" + library + "'")) {
    const std::size_t nameAt = line.find(' ', line.find(' ') + 1);
    if (nameAt == std::string::npos) continue;
    std::string name = line.substr(nameAt + 1);
    if (name.find("@@") != std::string::npos) name.erase(name.find("@@"));
    if (name == "KVX_0") continue;  // the version node
    if (name.rfind("kvx_", 0) == 0) {
      exportedC.insert(name);
      continue;
    }
    // What names the symbol, before its parameter list.
    const std::string head = name.substr(0, name.find('('));
    const std::regex publicCxx(R"(^((typeinfo|typeinfo name|vtable) for )?kvx::[A-Z]?[A-Za-z]+.*)");
    const std::regex internal(R"(kvx::[a-z][a-z_0-9]*::|::Impl::)");
    if (std::regex_match(head, publicCxx) && !std::regex_search(head, internal)) {
      ++cxx;
    } else {
      foreign.push_back(name);
    }
  }
  INFO("exported, not public: " << [&] {
    std::string all;
    for (std::size_t i = 0; i < foreign.size() && i < 20; ++i) all += "\n  " + foreign[i];
    return all;
  }());
  CHECK(foreign.empty());
  CHECK(exportedC == declared);
  CHECK(cxx >= 50);  // Agent, KvAgent, Status and the vocabulary's functions

  bool soname = false;
  for (const std::string& line : commandLines("readelf -d '" + library + "'")) {
    if (line.find("(SONAME)") != std::string::npos) {
      soname = true;
      CHECK_THAT(line, Catch::Contains("libkvx.so.0"));
    }
  }
  CHECK(soname);
}
