# SPDX-License-Identifier: Apache-2.0
# copy-read: what a short run writes, not how fast anything was.  With a toy
# peer (a byte loop) it must emit, per size and then mode, one record per
# method on the size axis with glibc as the baseline, and the verdicts: the
# ranking per then mode, where non-temporal stores win, what the rows are.
# then=read alone emits no copy-alone records or verdicts; a peer that
# copies half of what it is asked must stop the run (the read checks every
# copy); bad arguments are refused before anything is written.
#   cmake -DBENCH=<build>/bench -DCC=<compiler> -DOUT=<dir> -P check_copy_read.cmake
cmake_policy(SET CMP0054 NEW)   # "size" is a word here, not the variable of that name
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
set(EXP ${BENCH}/memkit-exp-copy-read)

include(${CMAKE_CURRENT_LIST_DIR}/peer_library.cmake)
build_peer(toy "${PEER_BYTE_MEMCPY}")
build_peer(half [=[
#include <stddef.h>
void *memcpy(void *d, const void *s, size_t n)
{
    char *a = d;
    const char *b = s;
    for (n /= 2; n--;)
        *a++ = *b++;
    return d;
}
]=])

# Reads a run's records: MEASURED (series|then|size ...), VERDICTS (kind: text), ENDED.
function(read_run path)
  file(STRINGS ${path} lines)
  list(GET lines 0 first)
  string(JSON type GET "${first}" type)
  if(NOT type STREQUAL "fingerprint")
    message(FATAL_ERROR "${path}: the first record is not the fingerprint: ${first}")
  endif()
  set(measured "")
  set(verdicts "")
  set(ended 0)
  foreach(line IN LISTS lines)
    string(JSON type GET "${line}" type)
    if(type STREQUAL "measurement")
      string(JSON series GET "${line}" series)
      string(JSON axis GET "${line}" axis name)
      string(JSON axis_unit GET "${line}" axis unit)
      string(JSON metric GET "${line}" metric)
      string(JSON better GET "${line}" better)
      string(JSON value GET "${line}" value)
      string(JSON nsamples LENGTH "${line}" samples)
      string(JSON size GET "${line}" params size)
      string(JSON then GET "${line}" params then)
      string(JSON src GET "${line}" params src)
      string(JSON dst GET "${line}" params dst)
      if(NOT axis STREQUAL "size" OR NOT axis_unit STREQUAL "B" OR NOT metric STREQUAL "gb_per_s"
         OR NOT better STREQUAL "higher" OR NOT value GREATER 0 OR NOT nsamples EQUAL 5)
        message(FATAL_ERROR "not a copy-read record (size axis in B, GB/s, 5 rounds): ${line}")
      endif()
      string(JSON base ERROR_VARIABLE no_base GET "${line}" baseline series)
      if(series STREQUAL "glibc")
        if(NOT no_base)
          message(FATAL_ERROR "glibc has a baseline: ${line}")
        endif()
      else()
        string(JSON base_then GET "${line}" baseline params then)
        string(JSON ratio GET "${line}" ratio)
        if(NOT base STREQUAL "glibc" OR NOT base_then STREQUAL then OR NOT ratio GREATER 0)
          message(FATAL_ERROR "not paired with glibc at the same point: ${line}")
        endif()
      endif()
      list(APPEND measured "${series}|${then}|${size}|${src}|${dst}")
    elseif(type STREQUAL "verdict")
      string(JSON text GET "${line}" text)
      string(REPLACE ";" "," text "${text}")   # one list item per verdict
      string(JSON kind ERROR_VARIABLE no_kind GET "${line}" kind)
      if(no_kind)
        set(kind "plain")
      endif()
      list(APPEND verdicts "${kind}: ${text}")
    elseif(type STREQUAL "end")
      set(ended 1)
    endif()
  endforeach()
  set(MEASURED "${measured}" PARENT_SCOPE)
  set(VERDICTS "${verdicts}" PARENT_SCOPE)
  set(ENDED ${ended} PARENT_SCOPE)
endfunction()

function(require_verdict pattern)
  foreach(v IN LISTS VERDICTS)
    if(v MATCHES "${pattern}")
      return()
    endif()
  endforeach()
  string(REPLACE ";" "\n" all "${VERDICTS}")
  message(FATAL_ERROR "no verdict matching '${pattern}' among:\n${all}")
endfunction()

# ---- both then modes, the toy racing ----
execute_process(COMMAND ${EXP} --quick min=256K max=1M peer=${OUT}/libtoy.so
                        --jsonl ${OUT}/both.jsonl
                RESULT_VARIABLE rc OUTPUT_VARIABLE table ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "copy-read --quick failed (${rc}): ${err}")
endif()
if(NOT table MATCHES "then +glibc +memkit +cached-stores +nt-stores +toy +nt/cached\n")
  message(FATAL_ERROR "not one column per method in the table:\n${table}")
endif()
read_run(${OUT}/both.jsonl)
if(NOT ENDED)
  message(FATAL_ERROR "no end record")
endif()
set(want "")
foreach(size 262144 524288 1048576)
  foreach(then read none)
    foreach(series glibc memkit cached-stores nt-stores toy)
      list(APPEND want "${series}|${then}|${size}|warm|cold")
    endforeach()
  endforeach()
endforeach()
list(SORT want)
list(SORT MEASURED)
if(NOT MEASURED STREQUAL want)
  message(FATAL_ERROR "records: got\n${MEASURED}\nwant\n${want}")
endif()
foreach(what "copy, then a read of the copy" "copy alone")
  require_verdict("^fastest: ${what}, fastest by the statistic")
  require_verdict("^plain: ${what} \\(source warm, destination cold\\): non-temporal stores "
                  "(win from|did not win from).*, memkit's nt_copy_threshold is .* per size: ")
endforeach()
require_verdict("^note: memkit is mk_memcpy as dispatched .*cached-stores is mk_memcpy called ")
require_verdict("^note: peer toy is .*/libtoy.so: races its own memcpy")

# ---- then=read alone, cold source, warm destination ----
execute_process(COMMAND ${EXP} --quick min=256K max=256K then=read src=cold dst=warm
                        --jsonl ${OUT}/read.jsonl
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "copy-read then=read failed (${rc}): ${err}")
endif()
read_run(${OUT}/read.jsonl)
list(SORT MEASURED)
set(want "cached-stores|read|262144|cold|warm;glibc|read|262144|cold|warm;"
         "memkit|read|262144|cold|warm;nt-stores|read|262144|cold|warm")
string(REPLACE ";;" ";" want "${want}")
if(NOT MEASURED STREQUAL want)
  message(FATAL_ERROR "then=read src=cold dst=warm: got\n${MEASURED}\nwant\n${want}")
endif()
require_verdict("^plain: copy, then a read of the copy \\(source cold, destination warm\\)")
foreach(v IN LISTS VERDICTS)
  if(v MATCHES "copy alone")
    message(FATAL_ERROR "then=read, yet a verdict on the copy alone: ${v}")
  endif()
endforeach()

# ---- a fresh destination: every copy goes to pages never touched (the
# half-copying peer is caught there too: the check reads the fresh copy) ----
execute_process(COMMAND ${EXP} --quick min=4M max=4M then=read dst=fresh peer=${OUT}/libtoy.so
                        --jsonl ${OUT}/fresh.jsonl
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "copy-read dst=fresh failed (${rc}): ${err}")
endif()
read_run(${OUT}/fresh.jsonl)
list(SORT MEASURED)
set(want "cached-stores|read|4194304|warm|fresh;glibc|read|4194304|warm|fresh;"
         "memkit|read|4194304|warm|fresh;nt-stores|read|4194304|warm|fresh;"
         "toy|read|4194304|warm|fresh")
string(REPLACE ";;" ";" want "${want}")
if(NOT MEASURED STREQUAL want)
  message(FATAL_ERROR "dst=fresh: got\n${MEASURED}\nwant\n${want}")
endif()
require_verdict("^plain: copy, then a read of the copy \\(source warm, destination fresh\\)")
execute_process(COMMAND ${EXP} --quick min=256K max=256K dst=fresh peer=${OUT}/libhalf.so
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "method half copied 262144 bytes wrong")
  message(FATAL_ERROR "dst=fresh: a peer copying half was not caught (exit ${rc}): ${err}")
endif()

# ---- a copy gone wrong stops the run ----
execute_process(COMMAND ${EXP} --quick min=256K max=256K peer=${OUT}/libhalf.so
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "method half copied 262144 bytes wrong")
  message(FATAL_ERROR "a peer copying half was not caught (exit ${rc}): ${err}")
endif()

# ---- refused arguments: exit 2, one line, no records ----
foreach(bad "then=read,read" "then=write" "src=hot" "src=fresh" "dst=" "dst=hot" "per_octave=0")
  execute_process(COMMAND ${EXP} --quick ${bad} --jsonl ${OUT}/bad.jsonl
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "^error: " OR EXISTS ${OUT}/bad.jsonl)
    message(FATAL_ERROR "'${bad}' not refused with exit 2 and no records (exit ${rc}): ${err}")
  endif()
endforeach()
# checked with the other arguments, before anything runs (the lab's info.check)
execute_process(COMMAND ${EXP} --quick min=1M max=512K RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 2 OR NOT err STREQUAL "error: copy-read: min=1M is above max=512K\n" OR
   NOT out STREQUAL "")
  message(FATAL_ERROR "min above max not refused (exit ${rc}): ${err}")
endif()
