# SPDX-License-Identifier: Apache-2.0
# Working sets: size-distributions and memset-random measure hot and cold
# (ws=), every record says which (ws, ws_bytes sized from the fingerprint's
# caches, pages), each level has its verdict, and a bad level is one line.
#   cmake -DBENCH=<build>/bench -DOUT=<dir> -P check_working_sets.cmake
cmake_minimum_required(VERSION 3.18)   # the project's; IN_LIST needs one
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})

execute_process(COMMAND ${BENCH}/memkit-exp-size-distributions --fingerprint OUTPUT_VARIABLE fp)
string(JSON l1 GET "${fp}" cache l1d)
string(JSON l2 GET "${fp}" cache l2)
string(JSON l3 GET "${fp}" cache l3)
math(EXPR want_l1 "${l1} / 4")
math(EXPR want_l2 "${l2} / 4")
math(EXPR want_l3 "${l3} / 8")
math(EXPR want_dram "${l3} * 2")
set(want_hot 4096)       # hot: the window the calls start in
set(want_256K 262144)

# Every measurement names a working set of the list, with its size and pages;
# every level has memkit's verdict.  (records, levels, verdict pattern)
function(check_levels jsonl levels verdict_re)
  file(STRINGS ${jsonl} lines)
  set(seen "")
  set(verdicts "")
  foreach(line IN LISTS lines)
    string(JSON type GET "${line}" type)
    if(type STREQUAL "measurement")
      string(JSON ws GET "${line}" params ws)
      string(JSON bytes GET "${line}" params ws_bytes)
      string(JSON pages GET "${line}" params pages)
      if(NOT ws IN_LIST levels OR NOT bytes EQUAL "${want_${ws}}" OR NOT pages STREQUAL "4k")
        message(FATAL_ERROR "ws=${ws} ws_bytes=${bytes} pages=${pages} (want ${want_${ws}}, 4k): ${line}")
      endif()
      list(APPEND seen ${ws})
    elseif(type STREQUAL "verdict")
      string(JSON text GET "${line}" text)
      if(text MATCHES "${verdict_re}")
        list(APPEND verdicts ${CMAKE_MATCH_1})
      endif()
    endif()
  endforeach()
  list(REMOVE_DUPLICATES seen)
  if(NOT seen STREQUAL levels OR NOT verdicts STREQUAL levels)
    message(FATAL_ERROR "${jsonl}: measured '${seen}', verdicts for '${verdicts}', expected '${levels}'")
  endif()
endfunction()

set(levels hot l1 l2 l3 dram 256K)
execute_process(COMMAND ${BENCH}/memkit-exp-size-distributions --quick only=Memcpy_Fleet calls=1000
                        rounds=3 processes=1 ws=hot,l1,l2,l3,dram,256K --jsonl ${OUT}/sd.jsonl
                RESULT_VARIABLE rc OUTPUT_VARIABLE table ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "size-distributions at six working sets failed (${rc}): ${err}")
endif()
if(NOT table MATCHES "\nMemcpy_Fleet +memcpy +dram +[0-9]")
  message(FATAL_ERROR "no ws column in the table:\n${table}")
endif()
check_levels(${OUT}/sd.jsonl "${levels}" "^memcpy, ws=([^ ]+) .*geometric mean .*; worst ")

execute_process(COMMAND ${BENCH}/memkit-exp-memset-random rows=gran:16_minSize:32_maxSize:64_minOffset:0_maxOffset:4095_clearL1:no
                        sizes=1000 reps=2 processes=1 ws=hot,l3 --jsonl ${OUT}/mr.jsonl
                RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "memset-random at two working sets failed (${rc}): ${err}")
endif()
check_levels(${OUT}/mr.jsonl "hot;l3" "^ws=([^ ]+) .*mk_memset .* vs glibc over 1 rows")

# pages=huge: whatever the kernel gave, said as such
execute_process(COMMAND ${BENCH}/memkit-exp-size-distributions --quick only=Memset_Fleet calls=1000
                        rounds=3 processes=1 ws=dram pages=huge --jsonl ${OUT}/huge.jsonl
                RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
file(STRINGS ${OUT}/huge.jsonl lines REGEX "\"type\":\"measurement\"")
list(GET lines 0 line)
string(JSON pages GET "${line}" params pages)
if(NOT rc EQUAL 0 OR NOT pages MATCHES "^(huge|mixed|4k)$")
  message(FATAL_ERROR "pages=huge: exit ${rc}, pages '${pages}': ${err}")
endif()

foreach(bad "ws=l4" "ws=hot,hot" "pages=2M")
  execute_process(COMMAND ${BENCH}/memkit-exp-size-distributions --quick ${bad}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REGEX MATCHALL "\n" newlines "${err}")
  list(LENGTH newlines nlines)
  if(NOT rc EQUAL 2 OR NOT nlines EQUAL 1 OR NOT out STREQUAL "" OR NOT err MATCHES "^error: ")
    message(FATAL_ERROR "${bad}: exit ${rc}, stderr '${err}'")
  endif()
endforeach()
