# Precompiled headers (gcc only; docs/performance.md, "Build time").
#
# Every unity translation unit of ppspec parses the same standard headers and fmt before a line of
# its own: about 2.5 s of gcc's time each, over a hundred translation units per preset. Parsed once
# into a .gch per flag set, they cost ~0.4 s to load. Two flag sets exist: the build type's, owned by
# ppspec_core and reused by every library and tool, and the tests' (PPSPEC_TEST_COMPILE_OPTIONS,
# another -O level, which gcc's precompiled headers must match), owned by ppspec_test_pch, which adds
# GoogleTest. gcc also refuses a precompiled header built with a macro defined that a translation
# unit does not define, so each owner defines only what every user defines: ppspec_core links fmt
# alone, ppspec_test_pch fmt and GoogleTest, and neither has definitions of its own. nlohmann/json
# is left out: it would cost each translation unit that does not use it more to load than the few
# that do save.
#
# clang (the fuzz preset) is left alone: it refuses, rather than ignores, a precompiled header built
# with other flags. Shared libraries (the NCCL profiler plugin, position-independent code) and
# targets that do not link fmt are left alone too.
set(PPSPEC_PCH_HEADERS
    <algorithm> <cstdint> <deque> <filesystem> <fstream> <functional> <map> <memory> <optional>
    <set> <span> <sstream> <string> <string_view> <variant> <vector> <fmt/format.h> <fmt/ranges.h>)

# Appends to `out` every target defined in `directory` and below.
function(ppspec_targets_below directory out)
  get_property(targets DIRECTORY ${directory} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirectories DIRECTORY ${directory} PROPERTY SUBDIRECTORIES)
  foreach(subdirectory ${subdirectories})
    ppspec_targets_below(${subdirectory} below)
    list(APPEND targets ${below})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# Whether `target` links fmt, directly or through the libraries it links: the precompiled headers
# are built with fmt's compile definitions, and gcc ignores them in a translation unit without.
function(ppspec_links_fmt target out)
  set(${out} OFF PARENT_SCOPE)
  set(pending ${target})
  set(seen "")
  while(pending)
    list(POP_FRONT pending current)
    if(current IN_LIST seen OR NOT TARGET ${current})
      continue()
    endif()
    list(APPEND seen ${current})
    if(current STREQUAL "${PPSPEC_FMT}")
      set(${out} ON PARENT_SCOPE)
      return()
    endif()
    get_target_property(type ${current} TYPE)
    set(properties INTERFACE_LINK_LIBRARIES)
    if(NOT type MATCHES "^(INTERFACE|UNKNOWN)_LIBRARY$")
      list(APPEND properties LINK_LIBRARIES)
    endif()
    foreach(property ${properties})
      get_target_property(links ${current} ${property})
      if(links)  # not links-NOTFOUND, which would also end the loop's if(pending)
        list(APPEND pending ${links})
      endif()
    endforeach()
  endwhile()
endfunction()

# Whether `target` is one precompiled headers apply to: a static library or an executable with C++
# sources, not position-independent, linking fmt.
function(ppspec_pch_applies target out)
  set(${out} OFF PARENT_SCOPE)
  get_target_property(type ${target} TYPE)
  get_target_property(pic ${target} POSITION_INDEPENDENT_CODE)
  if(NOT type MATCHES "^(STATIC_LIBRARY|EXECUTABLE)$" OR pic)
    return()
  endif()
  get_target_property(sources ${target} SOURCES)
  list(FILTER sources INCLUDE REGEX "\\.cc$")
  ppspec_links_fmt(${target} links_fmt)
  if(sources AND links_fmt)
    set(${out} ON PARENT_SCOPE)
  endif()
endfunction()

function(ppspec_precompile_headers)
  if(NOT PPSPEC_PCH OR NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    return()
  endif()
  target_precompile_headers(ppspec_core PRIVATE ${PPSPEC_PCH_HEADERS})
  add_library(ppspec_test_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/test_pch.cc)
  target_compile_options(ppspec_test_pch PRIVATE ${PPSPEC_WARNINGS} ${PPSPEC_TEST_COMPILE_OPTIONS})
  target_link_libraries(ppspec_test_pch PRIVATE GTest::gtest ${PPSPEC_FMT})
  target_precompile_headers(ppspec_test_pch PRIVATE ${PPSPEC_PCH_HEADERS} <gtest/gtest.h>)
  ppspec_targets_below(${PROJECT_SOURCE_DIR} targets)
  string(JOIN " " test_options ${PPSPEC_TEST_COMPILE_OPTIONS})
  foreach(target ${targets})
    ppspec_pch_applies(${target} applies)
    if(NOT applies OR target STREQUAL "ppspec_core")
      continue()
    endif()
    get_target_property(options ${target} COMPILE_OPTIONS)
    string(JOIN " " target_options ${options})
    # A precompiled header gcc cannot use is otherwise parsed again silently: make it an error.
    target_compile_options(${target} PRIVATE -Winvalid-pch)
    if(target_options MATCHES "${test_options}$")
      target_precompile_headers(${target} REUSE_FROM ppspec_test_pch)
    else()
      target_precompile_headers(${target} REUSE_FROM ppspec_core)
    endif()
  endforeach()
endfunction()
