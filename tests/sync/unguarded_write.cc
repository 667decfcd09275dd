// Not a test of its own: tests/CMakeLists.txt has clang compile it with -Wthread-safety and
// expects the warning, so that the KVX_* annotations are known to reach the compiler.
#include "sync/mutex.h"

namespace {

struct Counter {
  kvx::sync::Mutex mutex;
  int value KVX_GUARDED_BY(mutex) = 0;
};

}  // namespace

void bumpWithoutTheLock(Counter& counter) { ++counter.value; }
