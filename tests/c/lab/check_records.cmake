# SPDX-License-Identifier: Apache-2.0
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

# copy-sweep: the copiers that need aligned buffers say so in their records
# (and only they), and below 4 KiB no loss is blamed on one of them.
execute_process(COMMAND ${BENCH}/memkit-exp-copy-sweep --quick min=256 max=8K offsets=few
                        only=libc,memkit,avx_aligned_unroll4 --jsonl ${OUT}/copy.jsonl
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "copy-sweep failed: ${rc}")
endif()
file(STRINGS ${OUT}/copy.jsonl lines)
set(restricted 0)
foreach(line IN LISTS lines)
  string(JSON type GET "${line}" type)
  if(type STREQUAL "measurement")
    string(JSON series GET "${line}" series)
    string(JSON contract ERROR_VARIABLE none GET "${line}" contract)
    if(series STREQUAL "avx_aligned_unroll4")
      if(NOT contract MATCHES "aligned to 128 B")
        message(FATAL_ERROR "no contract in ${line}")
      endif()
      math(EXPR restricted "${restricted} + 1")
    elseif(NOT none)
      message(FATAL_ERROR "a contract for ${series}: ${line}")
    endif()
  elseif(type STREQUAL "verdict")
    string(JSON text GET "${line}" text)
    string(JSON kind ERROR_VARIABLE no_kind GET "${line}" kind)
    if(kind STREQUAL "loss" AND text MATCHES "avx_aligned_unroll4" AND text MATCHES "(256 B|512 B|1 KiB|2 KiB)")
      message(FATAL_ERROR "a loss below 4 KiB against a copier with a contract: ${text}")
    endif()
  endif()
endforeach()
if(restricted EQUAL 0)
  message(FATAL_ERROR "no avx_aligned_unroll4 measurement in copy-sweep's records")
endif()
