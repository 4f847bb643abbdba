// Fiber stacks, allocated like boost::fibers::fixedsize_stack but remembered by the fiber, so that
// under AddressSanitizer every switch can tell ASan which stack runs next (SchedulerAlgorithm):
// ASan then knows each fiber's stack, and its cleanup at a throw covers the right one.
#pragma once

#include <boost/context/stack_context.hpp>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace ppspec::sim {

struct StackExtent {
  const char* bottom = nullptr;
  size_t size = 0;
};

class FiberStack {
 public:
  FiberStack(size_t size, StackExtent* extent) : size_(size), extent_(extent) {}

  boost::context::stack_context allocate() {
    void* vp = std::malloc(size_);
    if (vp == nullptr) throw std::bad_alloc();
    boost::context::stack_context sctx;
    sctx.size = size_;
    sctx.sp = static_cast<char*>(vp) + size_;
    if (extent_ != nullptr) *extent_ = StackExtent{static_cast<const char*>(vp), size_};
    return sctx;
  }

  void deallocate(boost::context::stack_context& sctx) noexcept {
    std::free(static_cast<char*>(sctx.sp) - sctx.size);
  }

 private:
  size_t size_;
  StackExtent* extent_;
};

}  // namespace ppspec::sim
