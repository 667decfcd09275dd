// Linked into every test labelled `serial` in the builds without a sanitizer. A serial test
// is left out of the ThreadSanitizer build (tests/CMakeLists.txt): with one thread there is
// nothing for it to find there. That holds only while the test starts no thread, so this
// definition takes the place of libc's pthread_create for the whole process (the test's own
// std::thread, and any library's), and ends the test at the first thread it starts, saying
// why. The executable exports the symbol (--export-dynamic-symbol), which is what makes the
// shared libraries' calls reach it.
#include <pthread.h>
#include <unistd.h>

#include <cstdlib>

// What tests/support/serial_guard_test.cc looks for to know the guard is linked.
extern "C" const int kvxSerialGuardLinked = 1;

extern "C" __attribute__((visibility("default"))) int pthread_create(
    pthread_t* /*thread*/, const pthread_attr_t* /*attributes*/, void* (* /*start*/)(void*),
    void* /*argument*/) {
  static const char kWhy[] =
      "kvx-test: this test is labelled 'serial' (so the ThreadSanitizer build leaves it out) "
      "but it started a thread: take 'serial' off its kvx-test-labels line\n";
  (void)!::write(STDERR_FILENO, kWhy, sizeof kWhy - 1);
  std::abort();
}
