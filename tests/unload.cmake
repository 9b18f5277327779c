# libmemkit.so loaded and unloaded again and again (dlopen/dlclose) with the
# default pool's workers started each time: see unload/dlclose_cycles.c.
add_executable(dlclose_cycles unload/dlclose_cycles.c)
target_link_libraries(dlclose_cycles PRIVATE ${CMAKE_DL_LIBS})
add_test(NAME dlclose_cycles COMMAND dlclose_cycles $<TARGET_FILE:memkit>)
set_tests_properties(dlclose_cycles PROPERTIES LABELS threaded TIMEOUT 120)
