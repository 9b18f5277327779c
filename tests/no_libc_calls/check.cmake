# Fails when an object of the library calls memset/memcpy/memmove (or their
# fortified forms): the preload shim *is* those functions, and its ifunc
# resolvers run before libc is ready, so such a call would recurse or crash.
#   cmake -DNM=nm -DOBJECTS="a.o;b.o" -P check.cmake
set(found "")
foreach(obj IN LISTS OBJECTS)
  execute_process(COMMAND ${NM} -u ${obj} OUTPUT_VARIABLE undefined RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} -u ${obj} failed (${rc})")
  endif()
  string(REGEX MATCHALL "U (__)?(memset|memcpy|memmove|bzero)(_chk)?\n" calls "${undefined}")
  foreach(call IN LISTS calls)
    string(STRIP "${call}" call)
    get_filename_component(name ${obj} NAME)
    list(APPEND found "${name}: ${call}")
  endforeach()
endforeach()
list(LENGTH OBJECTS count)
if(found)
  string(REPLACE ";" "\n  " found "${found}")
  message(FATAL_ERROR "library objects calling libc's memory routines:\n  ${found}")
endif()
message(STATUS "${count} library objects, none calls memset/memcpy/memmove")
