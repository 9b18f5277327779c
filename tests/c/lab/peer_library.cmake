# SPDX-License-Identifier: Apache-2.0
# The lab's peer= tests race a tiny library of their own: byte loops, which
# the compiler must not turn back into memcpy/memset calls.
#   include(${CMAKE_CURRENT_LIST_DIR}/peer_library.cmake)
#   build_peer(toy "${PEER_BYTE_MEMCPY}${PEER_BYTE_MEMSET}")   ->  ${OUT}/libtoy.so
set(PEER_BYTE_MEMCPY [=[
#include <stddef.h>
void *memcpy(void *d, const void *s, size_t n)
{
    char *a = d;
    const char *b = s;
    while (n--)
        *a++ = *b++;
    return d;
}
]=])
set(PEER_BYTE_MEMSET [=[
void *memset(void *d, int c, size_t n)
{
    char *a = d;
    while (n--)
        *a++ = (char)c;
    return d;
}
]=])

# ${OUT}/lib<name>.so from the C source given; the test stops if it does not build.
function(build_peer name source)
  file(WRITE ${OUT}/${name}.c "${source}")
  execute_process(COMMAND ${CC} -O2 -shared -fPIC -fno-builtin -fno-tree-loop-distribute-patterns
                          ${OUT}/${name}.c -o ${OUT}/lib${name}.so
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cannot build lib${name}.so: ${err}")
  endif()
endfunction()
