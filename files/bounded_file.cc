#include "files/bounded_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kvx::files {
namespace {

// Closes the descriptor on every path out.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string quoted(std::string_view what, const std::filesystem::path& path) {
  return std::string(what) + " '" + path.string() + "'";
}

}  // namespace

std::string_view fileKindName(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFSOCK: return "a socket";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFLNK: return "a symbolic link";
    default: return "an unknown kind of file";
  }
}

Result<std::string> readBoundedFile(const std::filesystem::path& path, std::uint64_t maxBytes,
                                    std::string_view what) {
  // Non-blocking, so that opening a FIFO returns at once instead of waiting for a writer; the
  // flag changes nothing for a regular file.
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    return notFound(quoted(what, path) + " cannot be opened: " + std::strerror(errno));
  }
  struct stat status {};
  if (::fstat(fd.get(), &status) != 0) {
    return notFound(quoted(what, path) + " cannot be examined: " + std::strerror(errno));
  }
  if (!S_ISREG(status.st_mode)) {
    return invalidArgument(quoted(what, path) + " is " + std::string(fileKindName(status.st_mode)) +
                           ", not a regular file");
  }
  const std::string bound =
      "the " + std::to_string(maxBytes) + " bytes a " + std::string(what) + " may have";
  if (static_cast<std::uint64_t>(status.st_size) > maxBytes) {
    return invalidArgument(quoted(what, path) + " holds " + std::to_string(status.st_size) +
                           " bytes, more than " + bound);
  }
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t got = ::read(fd.get(), buffer, sizeof buffer);
    if (got < 0) {
      if (errno == EINTR) continue;
      return notFound(quoted(what, path) + " cannot be read: " + std::strerror(errno));
    }
    if (got == 0) break;
    if (text.size() + static_cast<std::size_t>(got) > maxBytes) {
      return invalidArgument(quoted(what, path) + " holds more than " + bound);
    }
    text.append(buffer, static_cast<std::size_t>(got));
  }
  return text;
}

}  // namespace kvx::files
