#pragma once

// CLI11's App, declared only: the headers that take an App& need no more, and CLI11's full
// header (header-only, with validator objects built in every file that includes it) is
// heavy enough to triple a small file's compile time. Files that build options include
// <CLI/CLI.hpp> themselves.
namespace CLI {
class App;
}  // namespace CLI
