# SPDX-License-Identifier: Apache-2.0
# libmemkit.so loaded and unloaded again and again (dlopen/dlclose) with the
# default pool's workers started each time: see unload/dlclose_cycles.c.
add_executable(dlclose_cycles unload/dlclose_cycles.c)
target_link_libraries(dlclose_cycles PRIVATE ${CMAKE_DL_LIBS})
# (50 cycles; 10 under a sanitizer, where each costs ~0.4 s)
if(MEMKIT_SANITIZE)
  set(DLCLOSE_CYCLES 10)
else()
  set(DLCLOSE_CYCLES 50)
endif()
add_test(NAME dlclose_cycles COMMAND dlclose_cycles $<TARGET_FILE:memkit> ${DLCLOSE_CYCLES})
set_tests_properties(dlclose_cycles PROPERTIES LABELS threaded TIMEOUT 120)
