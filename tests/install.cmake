# SPDX-License-Identifier: Apache-2.0
# `cmake --install` into a scratch prefix, then build and run the examples
# against it: with pkg-config (examples/pkgconfig) and with
# find_package(memkit) (examples/cmake), each against the .so and the .a.
# Sanitizer builds are skipped: their library needs the sanitizer runtime.
if(NOT MEMKIT_SANITIZE)
  add_test(NAME install
    COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
      -DWORK=${PROJECT_BINARY_DIR}/install-test -DLIBDIR=${CMAKE_INSTALL_LIBDIR}
      -DINCLUDEDIR=${CMAKE_INSTALL_INCLUDEDIR} -DC_COMPILER=${CMAKE_C_COMPILER}
      -DSOVERSION=$<TARGET_PROPERTY:memkit,SOVERSION>
      -P ${CMAKE_CURRENT_LIST_DIR}/install/check.cmake)
  set_tests_properties(install PROPERTIES TIMEOUT 300)
endif()
