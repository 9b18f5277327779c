# SPDX-License-Identifier: Apache-2.0
# The lab's copy contestants (bench/lab/copy_methods*.c) for the tests that
# check every copier: built in here, as ipc.cmake builds the ring, so that
# the sanitizer builds, which have no bench/, test them too.
file(GLOB LAB_COPY_METHOD_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/bench/lab/copy_methods*.c)
memkit_isa_compile_options(${LAB_COPY_METHOD_SOURCES})
add_library(memkit_test_copy_methods STATIC ${LAB_COPY_METHOD_SOURCES})
target_include_directories(memkit_test_copy_methods PUBLIC ${PROJECT_SOURCE_DIR}/bench/lab
  PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_compile_definitions(memkit_test_copy_methods PRIVATE _GNU_SOURCE)
target_link_libraries(memkit_test_copy_methods PUBLIC memkit_static)
foreach(t test_copiers test_ipc_ring test_parallel_copier)
  target_link_libraries(${t} PRIVATE memkit_test_copy_methods)
endforeach()
