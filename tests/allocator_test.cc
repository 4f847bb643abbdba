// The executables allocate with the allocator the build chose (PPSPEC_ALLOCATOR): with mimalloc,
// malloc and operator new are mimalloc's, not glibc's; a link that loses it (a linker dropping an
// unreferenced library) would fail here rather than quietly cost a tenth of a fuzz campaign.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#if defined(PPSPEC_ALLOCATOR_MIMALLOC)
#include <mimalloc.h>
#endif

namespace ppspec::testing {
namespace {

TEST(Allocator, MallocAndNewAreTheConfiguredAllocators) {
#if defined(PPSPEC_ALLOCATOR_MIMALLOC)
  void* block = std::malloc(64);
  const auto array = std::make_unique<int[]>(1000);
  EXPECT_TRUE(mi_is_in_heap_region(block));
  EXPECT_TRUE(mi_is_in_heap_region(array.get()));
  std::free(block);
  // And the check can fail: memory mimalloc did not give out is not in its heap.
  static int outside = 0;
  EXPECT_FALSE(mi_is_in_heap_region(&outside));
#else
  GTEST_SKIP() << "PPSPEC_ALLOCATOR=system: the C library's allocator (or a sanitizer's)";
#endif
}

}  // namespace
}  // namespace ppspec::testing
