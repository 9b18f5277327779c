# Runs real experiments briefly and checks what they write: several
# processes pooled into one record each (memset-sizes), and a re-executing
# experiment keeping the fingerprint of the run as started (parallel-sweep
# lifts parallel_threshold for itself, yet the record must describe the
# machine as the user ran it).
#   cmake -DBENCH=<build>/bench -DOUT=<dir> -P check_records.cmake
file(MAKE_DIRECTORY ${OUT})

execute_process(COMMAND ${BENCH}/memkit-exp-memset-sizes max=8 reps=2 processes=2
                        --jsonl ${OUT}/sizes.jsonl
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "memset-sizes failed: ${rc}")
endif()
file(STRINGS ${OUT}/sizes.jsonl lines)
list(LENGTH lines n)
list(GET lines 0 first)
string(JSON format GET "${first}" format)
if(NOT format EQUAL 2)
  message(FATAL_ERROR "the first record is not a format-2 fingerprint: ${first}")
endif()
set(pooled 0)
foreach(line IN LISTS lines)
  string(JSON type GET "${line}" type)
  if(type STREQUAL "fingerprint" AND NOT line STREQUAL first)
    message(FATAL_ERROR "a second fingerprint: ${line}")
  endif()
  if(type STREQUAL "measurement")
    string(JSON nproc LENGTH "${line}" process_samples)
    string(JSON nsamples LENGTH "${line}" samples)
    if(NOT nproc EQUAL 2 OR NOT nsamples EQUAL 4)
      message(FATAL_ERROR "not 2 processes x 2 rounds pooled: ${line}")
    endif()
    math(EXPR pooled "${pooled} + 1")
  endif()
endforeach()
if(pooled LESS 10)
  message(FATAL_ERROR "only ${pooled} measurements")
endif()

execute_process(COMMAND ${BENCH}/memkit-exp-parallel-sweep --fingerprint
                OUTPUT_VARIABLE fp RESULT_VARIABLE rc)
string(JSON want GET "${fp}" tunables)
execute_process(COMMAND ${BENCH}/memkit-exp-parallel-sweep min=4K max=4K threads=1
                        --jsonl ${OUT}/sweep.jsonl
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
file(STRINGS ${OUT}/sweep.jsonl lines)
list(GET lines 0 first)
string(JSON got GET "${first}" tunables)
if(NOT rc EQUAL 0 OR NOT got STREQUAL want)
  message(FATAL_ERROR "parallel-sweep (exit ${rc}) recorded tunables '${got}', the run had '${want}'")
endif()
