#pragma once

// Clang's thread-safety annotations (-Wthread-safety), spelled KVX_*: a lock is a capability,
// a member names the capability that guards it, a function names the capabilities it needs,
// takes or gives back. Under clang the compiler checks every access against them; elsewhere
// (gcc builds) they expand to nothing and only document.
//
//   sync::Mutex mutex_;
//   int count_ KVX_GUARDED_BY(mutex_) = 0;
//   void bumpLocked() KVX_REQUIRES(mutex_);
//
// The analysis follows one function at a time: a lambda is a function of its own (annotate
// it, e.g. a condition variable's predicate: `[&]() KVX_REQUIRES(mutex_) { return ready_; }`),
// and constructors and destructors are not checked.

#if defined(__clang__)
#define KVX_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define KVX_THREAD_ANNOTATION(x)
#endif

// On a class: its objects are capabilities (locks); `name` appears in the warnings.
#define KVX_CAPABILITY(name) KVX_THREAD_ANNOTATION(capability(name))
// On a class: an RAII object that holds a capability for its lifetime (a scoped lock).
#define KVX_SCOPED_CAPABILITY KVX_THREAD_ANNOTATION(scoped_lockable)

// On a data member: reading or writing it requires holding `x`.
#define KVX_GUARDED_BY(x) KVX_THREAD_ANNOTATION(guarded_by(x))
// On a pointer member: what it points to requires holding `x` (the pointer itself does not).
#define KVX_PT_GUARDED_BY(x) KVX_THREAD_ANNOTATION(pt_guarded_by(x))

// On a function: the caller must hold the capabilities.
#define KVX_REQUIRES(...) KVX_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
// On a function: the caller must not hold them (the function takes them itself).
#define KVX_EXCLUDES(...) KVX_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

// On a function: it returns holding the capabilities (none named: `this`).
#define KVX_ACQUIRE(...) KVX_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
// On a function: it is called holding the capabilities and returns without them.
#define KVX_RELEASE(...) KVX_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
// On a function: it returns `result` (true or false) exactly when it took the capabilities.
#define KVX_TRY_ACQUIRE(...) KVX_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
// On a function: the calling thread holds the capability after it returns (the analysis
// takes it at its word).
#define KVX_ASSERT_CAPABILITY(x) KVX_THREAD_ANNOTATION(assert_capability(x))
// On a function: it returns a reference to the capability `x`, so that annotations may name
// it through the call (`KVX_REQUIRES(transport_.mutex())`).
#define KVX_RETURN_CAPABILITY(x) KVX_THREAD_ANNOTATION(lock_returned(x))

// On a function: its body is not checked. Only where the analysis cannot express a correct
// pattern, with a comment saying why.
#define KVX_NO_THREAD_SAFETY_ANALYSIS KVX_THREAD_ANNOTATION(no_thread_safety_analysis)
