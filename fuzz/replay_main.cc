// Corpus replay: the main() of a fuzz target built without libFuzzer. Runs every file named on
// the command line, and every regular file inside every directory named, through
// LLVMFuzzerTestOneInput once, in sorted order. A violated property aborts (the target's
// checks); otherwise exits 0 after printing how many inputs ran. Used by CTest so that every
// build replays the committed seed corpus, and by hand to reproduce a crash:
//   build/fuzz/frame_fuzz_replay crash-1234abcd

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

bool readFile(const fs::path& path, std::vector<std::uint8_t>& bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

// The files to replay: `arg` itself, or the regular files directly inside it.
bool collect(const fs::path& arg, std::vector<fs::path>& files) {
  std::error_code error;
  if (!fs::is_directory(arg, error)) {
    files.push_back(arg);
    return true;
  }
  for (const fs::directory_entry& entry : fs::directory_iterator(arg, error)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  if (error) {
    std::fprintf(stderr, "cannot list %s: %s\n", arg.c_str(), error.message().c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIRECTORY...\n", argv[0]);
    return 2;
  }
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    if (!collect(argv[i], files)) return 1;
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "no inputs found\n");
    return 1;
  }
  std::vector<std::uint8_t> bytes;
  for (const fs::path& file : files) {
    if (!readFile(file, bytes)) {
      std::fprintf(stderr, "cannot read %s\n", file.c_str());
      return 1;
    }
    std::fprintf(stderr, "replaying %s (%zu bytes)\n", file.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
  std::printf("replayed %zu inputs\n", files.size());
  return 0;
}
