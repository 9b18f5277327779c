# SPDX-License-Identifier: Apache-2.0
# The lab's own C core (bench/lab): its method, arguments and records.
if(TARGET memkit_lab)
  add_executable(test_lab_core c/lab/test_lab_core.c)
  target_link_libraries(test_lab_core PRIVATE memkit_lab)
  target_include_directories(test_lab_core PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_definitions(test_lab_core PRIVATE MEMKIT_TEST_DATA="${PROJECT_SOURCE_DIR}/tests/data")
  add_test(NAME test_lab_core COMMAND test_lab_core)
  add_executable(lab_helper_dies c/lab/lab_helper_dies.c)
  target_link_libraries(lab_helper_dies PRIVATE memkit_lab)
  # the lab's verdict on samples given, for tests/python/test_judge_recorded.py
  add_executable(lab_judge_probe c/lab/lab_judge_probe.c)
  target_link_libraries(lab_judge_probe PRIVATE memkit_lab)
  add_executable(lab_glibc_probe c/lab/lab_glibc_probe.c)
  target_link_libraries(lab_glibc_probe PRIVATE memkit_lab)
  add_executable(lab_pinning_probe c/lab/lab_pinning_probe.c)
  target_link_libraries(lab_pinning_probe PRIVATE memkit_lab)
  add_test(NAME lab_pinned_processes COMMAND lab_pinning_probe)
  add_test(NAME lab_threaded_not_pinned COMMAND lab_pinning_probe threaded)
  add_test(NAME lab_helper_signal COMMAND lab_helper_dies)
  set_tests_properties(lab_helper_signal PROPERTIES PASS_REGULAR_EXPRESSION
    "error: helper-dies: helper process 1 of 2 was killed by signal 8, SIGFPE \\(Floating point exception\\)")
endif()
if(TARGET memkit-exp-memset-sizes AND TARGET memkit-exp-parallel-sweep AND TARGET memkit-exp-copy-sweep)
  add_test(NAME lab_records COMMAND ${CMAKE_COMMAND}
           -DBENCH=${PROJECT_BINARY_DIR}/bench -DOUT=${CMAKE_CURRENT_BINARY_DIR}/lab_records
           -P ${CMAKE_CURRENT_LIST_DIR}/c/lab/check_records.cmake)
endif()
if(TARGET memkit-exp-size-distributions)
  add_test(NAME lab_peers COMMAND ${CMAKE_COMMAND}
           -DBENCH=${PROJECT_BINARY_DIR}/bench -DCC=${CMAKE_C_COMPILER}
           -DOUT=${CMAKE_CURRENT_BINARY_DIR}/lab_peers
           -P ${CMAKE_CURRENT_LIST_DIR}/c/lab/check_peers.cmake)
endif()
if(TARGET memkit-exp-size-distributions AND TARGET memkit-exp-memset-random)
  add_test(NAME lab_working_sets COMMAND ${CMAKE_COMMAND}
           -DBENCH=${PROJECT_BINARY_DIR}/bench -DOUT=${CMAKE_CURRENT_BINARY_DIR}/lab_working_sets
           -P ${CMAKE_CURRENT_LIST_DIR}/c/lab/check_working_sets.cmake)
endif()
if(TARGET memkit-exp-copy-read)
  add_test(NAME lab_copy_read COMMAND ${CMAKE_COMMAND}
           -DBENCH=${PROJECT_BINARY_DIR}/bench -DCC=${CMAKE_C_COMPILER}
           -DOUT=${CMAKE_CURRENT_BINARY_DIR}/lab_copy_read
           -P ${CMAKE_CURRENT_LIST_DIR}/c/lab/check_copy_read.cmake)
endif()
# What an experiment hands the lab is written by name (lab.h's
# LAB_DESIGNATED): a grid point written by position, built with the flags
# every program on the lab gets, stops the build with that message.
if(TARGET memkit_lab)
  add_library(lab_positional_point OBJECT EXCLUDE_FROM_ALL c/lab/lab_positional_point.c)
  target_link_libraries(lab_positional_point PRIVATE memkit_lab)
  add_test(NAME lab_positional_refused
           COMMAND ${CMAKE_COMMAND} --build ${PROJECT_BINARY_DIR} --target lab_positional_point)
  set_tests_properties(lab_positional_refused PROPERTIES
    PASS_REGULAR_EXPRESSION "error: positional initiali[sz]ation of field")
endif()
# docs/architecture.md's example experiment, built and run: the page's way
# of writing an experiment works as written.
if(TARGET memkit_lab)
  add_executable(lab_example_experiment ${PROJECT_SOURCE_DIR}/docs/example_experiment.c)
  target_link_libraries(lab_example_experiment PRIVATE memkit_lab)
  add_test(NAME lab_example_experiment COMMAND ${CMAKE_COMMAND}
           -DEXAMPLE=$<TARGET_FILE:lab_example_experiment>
           -DOUT=${CMAKE_CURRENT_BINARY_DIR}/lab_example
           -P ${CMAKE_CURRENT_LIST_DIR}/c/lab/check_example.cmake)
endif()
