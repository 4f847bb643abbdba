#include "sim/fiber_stack.h"

#include "core/assert.h"
#include "sim/sanitizer.h"

#include <cstdlib>
#include <new>
#include <vector>

#if defined(PPSPEC_ASAN_ACTIVE)
#include <sanitizer/asan_interface.h>
#define PPSPEC_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define PPSPEC_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define PPSPEC_POISON(p, n) ((void)(p), (void)(n))
#define PPSPEC_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace ppspec::sim {

namespace {

struct PooledStack {
  void* bottom = nullptr;
  size_t size = 0;
};

// Set when this thread's pool is destroyed, at the thread's end: a stack freed after that (a fiber
// outliving its thread's statics) goes straight back to malloc.
thread_local bool t_pool_destroyed = false;

// One pool per thread: a fiber lives and dies on the thread that made it, and each thread runs
// its own worlds. The destructor returns whatever is left when the thread ends.
class StackPool {
 public:
  StackPool() { stacks_.reserve(kPooledStacksPerThread); }
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;
  ~StackPool() {
    t_pool_destroyed = true;
    for (const PooledStack& s : stacks_) {
      PPSPEC_UNPOISON(s.bottom, s.size);
      std::free(s.bottom);
    }
  }

  // A pooled stack of exactly `size` bytes, or nullptr.
  void* take(size_t size) {
    for (size_t i = stacks_.size(); i-- > 0;) {
      if (stacks_[i].size != size) continue;
      void* bottom = stacks_[i].bottom;
      stacks_[i] = stacks_.back();
      stacks_.pop_back();
      PPSPEC_UNPOISON(bottom, size);
      return bottom;
    }
    return nullptr;
  }

  // Keeps the stack if there is room; false if the caller must free it.
  bool give(void* bottom, size_t size) {
    if (stacks_.size() >= kPooledStacksPerThread) return false;
    PPSPEC_POISON(bottom, size);
    stacks_.push_back(PooledStack{bottom, size});
    PPSPEC_ASSERT(stacks_.size() <= kPooledStacksPerThread, "the fiber stack pool outgrew its bound");
    return true;
  }

  size_t size() const { return stacks_.size(); }

 private:
  std::vector<PooledStack> stacks_;
};

StackPool& pool() {
  thread_local StackPool p;
  return p;
}

}  // namespace

boost::context::stack_context FiberStack::allocate() {
  void* vp = t_pool_destroyed ? nullptr : pool().take(size_);
  if (vp == nullptr) vp = std::malloc(size_);
  if (vp == nullptr) throw std::bad_alloc();
  boost::context::stack_context sctx;
  sctx.size = size_;
  sctx.sp = static_cast<char*>(vp) + size_;
  if (extent_ != nullptr) *extent_ = StackExtent{static_cast<const char*>(vp), size_};
  return sctx;
}

void FiberStack::deallocate(boost::context::stack_context& sctx) noexcept {
  void* bottom = static_cast<char*>(sctx.sp) - sctx.size;
  if (t_pool_destroyed || !pool().give(bottom, sctx.size)) std::free(bottom);
}

size_t pooled_fiber_stacks() { return t_pool_destroyed ? 0 : pool().size(); }

}  // namespace ppspec::sim
