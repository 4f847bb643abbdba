// The translation unit of ppspec_test_pch (cmake/precompiled_headers.cmake): empty, so that the
// target exists to own the tests' precompiled header. Nothing links it.
