# No object of the library calls memset/memcpy/memmove (see
# no_libc_calls/check.cmake).  gcc's builds only: the flag that keeps loops
# from becoming such calls is gcc's, and sanitizers add calls of their own.
if(CMAKE_C_COMPILER_ID STREQUAL "GNU" AND NOT MEMKIT_SANITIZE)
  add_test(NAME no_libc_calls
           COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} "-DOBJECTS=$<TARGET_OBJECTS:memkit_objects>"
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/no_libc_calls/check.cmake)
endif()
