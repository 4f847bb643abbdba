// Whether AddressSanitizer instruments this build: gcc says so with __SANITIZE_ADDRESS__, clang
// (the fuzz preset) only through __has_feature. The fiber-switch annotations depend on it.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define PPSPEC_ASAN_ACTIVE 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PPSPEC_ASAN_ACTIVE 1
#endif
#endif
