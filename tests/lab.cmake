# The lab's own C core (bench/lab): its method, arguments and records.
if(TARGET memkit_lab)
  add_executable(test_lab_core c/lab/test_lab_core.c)
  target_link_libraries(test_lab_core PRIVATE memkit_lab)
  add_test(NAME test_lab_core COMMAND test_lab_core)
endif()
