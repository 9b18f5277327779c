# SPDX-License-Identifier: Apache-2.0
# libFuzzer targets: every tests/fuzz/fuzz_*.c, built only with
# -DMEMKIT_BUILD_FUZZ=ON and clang (scripts/fuzz.sh does both, in build-fuzz/,
# with -DMEMKIT_SANITIZE=address,undefined for the library too).
option(MEMKIT_BUILD_FUZZ "build the libFuzzer targets in tests/fuzz (needs clang)" OFF)
if(MEMKIT_BUILD_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "MEMKIT_BUILD_FUZZ needs clang (libFuzzer); got ${CMAKE_C_COMPILER_ID}")
  endif()
  # Coverage feedback from the library itself, not only from the targets:
  # without it the fuzzer is blind to the size ladders' branches.
  target_compile_options(memkit_objects PRIVATE -fsanitize=fuzzer-no-link)
  file(GLOB FUZZ_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/fuzz/fuzz_*.c)
  foreach(src IN LISTS FUZZ_SOURCES)
    get_filename_component(name ${src} NAME_WE)
    add_executable(${name} ${src})
    target_compile_definitions(${name} PRIVATE _GNU_SOURCE)
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(${name} PRIVATE memkit_test_support)
  endforeach()
  # Every copier of the lab (tests/copy_methods.cmake builds them).
  target_link_libraries(fuzz_copy PRIVATE memkit_test_copy_methods)
  # The lab's distribution-file parser, on its own (the lab is not built here).
  target_sources(fuzz_distribution PRIVATE ${PROJECT_SOURCE_DIR}/bench/lab/distribution.c)
  target_include_directories(fuzz_distribution PRIVATE ${PROJECT_SOURCE_DIR}/bench/lab)
  target_link_libraries(fuzz_distribution PRIVATE m)
endif()
