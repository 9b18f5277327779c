# SPDX-License-Identifier: Apache-2.0
# The preload shim: a probe program run under LD_PRELOAD, real programs with
# and without it (byte-identical output), and a check that the library's own
# objects never call memset/memcpy/memmove (the shim would recurse).
if(TARGET memkit_preload)
  add_executable(preload_probe preload/probe.c)
  target_link_libraries(preload_probe PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
  # No sanitizer and no fortify: the probe calls the _chk entry points itself.
  target_compile_options(preload_probe PRIVATE -O1 -fno-builtin -U_FORTIFY_SOURCE)
  add_test(NAME preload_probe COMMAND preload_probe)
  set_tests_properties(preload_probe PROPERTIES
    ENVIRONMENT "LD_PRELOAD=$<TARGET_FILE:memkit_preload>")

  # Known calls for `memkit record` (tests/python/test_record.py).
  add_executable(record_probe preload/record_probe.c)
  target_link_libraries(record_probe PRIVATE Threads::Threads)
  target_compile_options(record_probe PRIVATE -O1 -fno-builtin -U_FORTIFY_SOURCE)

  add_executable(preload_one_call preload/one_call.c)
  target_compile_options(preload_one_call PRIVATE -O1 -fno-builtin -U_FORTIFY_SOURCE)
  add_test(NAME preload_startup_syscalls
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/preload/startup_syscalls.sh
            $<TARGET_FILE:memkit_preload> $<TARGET_FILE:preload_one_call>)

  add_test(NAME preload_entries_on_lines_of_their_own
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/preload/entry_lines.sh $<TARGET_FILE:memkit_preload>)

  add_test(NAME preload_real_programs
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/preload/real_programs.sh $<TARGET_FILE:memkit_preload>)
endif()

if(NOT MEMKIT_SANITIZE)
  add_test(NAME library_never_calls_libc_string_ops
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/preload/no_string_calls.sh $<TARGET_OBJECTS:memkit_objects>
    COMMAND_EXPAND_LISTS)
endif()

# Settings make the load-time resolvers do more (parse, report, pick a forced
# variant): run the shared library and the shim with them, since that code
# runs while the loader is still relocating the library.
if(NOT MEMKIT_SANITIZE)
  add_executable(smoke_shared c/test_smoke.c c/support/check.c)
  target_include_directories(smoke_shared PRIVATE c/support)
  target_link_libraries(smoke_shared PRIVATE memkit)
  set(SETTINGS "MEMKIT_TUNABLES=threads=2:nt_threshold=1M:memset=sse2:bogus=1")
  add_test(NAME shared_library_with_tunables COMMAND smoke_shared)
  set_tests_properties(shared_library_with_tunables PROPERTIES ENVIRONMENT "${SETTINGS}"
    PASS_REGULAR_EXPRESSION "memset variant: sse2")
  if(TARGET memkit_preload)
    add_test(NAME preload_beside_shared_library
      COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/preload/beside_library.sh
              $<TARGET_FILE:memkit_preload> $<TARGET_FILE:smoke_shared>)
    add_test(NAME preload_probe_with_tunables COMMAND preload_probe)
    set_tests_properties(preload_probe_with_tunables PROPERTIES
      ENVIRONMENT "LD_PRELOAD=$<TARGET_FILE:memkit_preload>;${SETTINGS}")
  endif()
endif()
