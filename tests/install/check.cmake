# SPDX-License-Identifier: Apache-2.0
# Run by the `install` ctest (tests/install.cmake) in script mode.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${what}: ok ${out}")
endfunction()

set(prefix ${WORK}/prefix)
file(REMOVE_RECURSE ${WORK})
run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

foreach(f ${INCLUDEDIR}/memkit.h ${INCLUDEDIR}/memkit_tunables.def ${LIBDIR}/libmemkit.so
          ${LIBDIR}/libmemkit.so.${SOVERSION} ${LIBDIR}/libmemkit.a
          ${LIBDIR}/pkgconfig/memkit.pc ${LIBDIR}/cmake/memkit/memkitConfig.cmake
          ${LIBDIR}/cmake/memkit/memkitConfigVersion.cmake
          libexec/memkit/memkit-exp-memset-sizes share/memkit/fleet-size-distributions/Memset_Fleet.csv)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "install test: ${prefix}/${f} was not installed")
  endif()
endforeach()

set(env ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${prefix}/${LIBDIR}/pkgconfig CC=${C_COMPILER})

# pkg-config
file(MAKE_DIRECTORY ${WORK}/pkgconfig)
run("pkg-config example: build" ${env} make -s -C ${SOURCE_DIR}/examples/pkgconfig OUT=${WORK}/pkgconfig)
# No LD_LIBRARY_PATH: the example records the library's directory (rpath),
# as the README and docs/library.md show.
run("pkg-config example: run against libmemkit.so" ${WORK}/pkgconfig/fill)
run("pkg-config example: run against libmemkit.a" ${WORK}/pkgconfig/fill-static)

# find_package(memkit)
run("CMake example: configure" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/cmake -B ${WORK}/cmake
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${C_COMPILER})
run("CMake example: build" ${CMAKE_COMMAND} --build ${WORK}/cmake)
run("CMake example: run against libmemkit.so" ${WORK}/cmake/fill)
run("CMake example: run against libmemkit.a" ${WORK}/cmake/fill_static)

# The static programs must not need the shared library; the shared ones
# need it by its soname (bumped at each ABI break), found in the prefix.
execute_process(COMMAND ldd ${WORK}/cmake/fill_static OUTPUT_VARIABLE deps)
if(deps MATCHES "libmemkit")
  message(FATAL_ERROR "install test: fill_static depends on libmemkit.so:\n${deps}")
endif()
execute_process(COMMAND ldd ${WORK}/cmake/fill OUTPUT_VARIABLE deps)
string(FIND "${deps}" "libmemkit.so.${SOVERSION} => ${prefix}/" at)
if(at EQUAL -1)
  message(FATAL_ERROR "install test: fill does not load libmemkit.so.${SOVERSION} from ${prefix}:\n${deps}")
endif()

# add_subdirectory(memkit) and FetchContent: the same targets, built from
# source inside the consumer's build.
function(consumer name)
  run("${name} example: configure" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/${name} -B ${WORK}/${name}
      -G Ninja -DCMAKE_C_COMPILER=${C_COMPILER} ${ARGN})
  run("${name} example: build" ${CMAKE_COMMAND} --build ${WORK}/${name})
  run("${name} example: run against libmemkit.so" ${WORK}/${name}/fill)
  run("${name} example: run against libmemkit.a" ${WORK}/${name}/fill_static)
  foreach(dir bench tools)
    if(EXISTS ${WORK}/${name}/memkit/${dir} OR EXISTS ${WORK}/${name}/_deps/memkit-build/${dir})
      message(FATAL_ERROR "install test: memkit as a subproject built its ${dir}/")
    endif()
  endforeach()
endfunction()
consumer(subproject -DMEMKIT_DIR=${SOURCE_DIR})
if(EXISTS ${SOURCE_DIR}/.git)
  consumer(fetchcontent -DMEMKIT_GIT_REPOSITORY=file://${SOURCE_DIR} -DMEMKIT_GIT_TAG=HEAD)
else()   # not a git checkout: FetchContent's own override to a local source tree
  consumer(fetchcontent -DFETCHCONTENT_SOURCE_DIR_MEMKIT=${SOURCE_DIR})
endif()
