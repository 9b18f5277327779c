# SPDX-License-Identifier: Apache-2.0
# Peers: another library's memcpy/memset racing as methods (peer=LIB.so).
# Builds its own tiny library here (byte loops, which the compiler must not
# turn back into memcpy/memset calls), runs size-distributions, copy-sweep
# and fill-regions with it, and checks the records and verdicts; then that a file that is no library, a
# library exporting none of the functions and a missing file are each one
# line on stderr, exit status 2, and nothing written.
#   cmake -DBENCH=<build>/bench -DCC=<compiler> -DOUT=<dir> -P check_peers.cmake
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
set(EXP ${BENCH}/memkit-exp-size-distributions)

include(${CMAKE_CURRENT_LIST_DIR}/peer_library.cmake)
build_peer(toy "${PEER_BYTE_MEMCPY}${PEER_BYTE_MEMSET}")
build_peer(none "int toy_nothing(void) { return 0; }\n")

# ---- the toy races: a series per op it exports, none for memmove ----
execute_process(COMMAND ${EXP} --quick only=_Fleet calls=2000 rounds=3 processes=1 ws=hot,l1
                        peer=${OUT}/libtoy.so --jsonl ${OUT}/toy.jsonl
                RESULT_VARIABLE rc OUTPUT_VARIABLE table ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "size-distributions with a peer failed (${rc}): ${err}")
endif()
if(NOT table MATCHES "ws +glibc ns +memkit ns[^\n]+ toy\n")
  message(FATAL_ERROR "no column for the peer in the table:\n${table}")
endif()
file(STRINGS ${OUT}/toy.jsonl lines)
set(peer_series "")
set(noted 0)
foreach(line IN LISTS lines)
  string(JSON type GET "${line}" type)
  if(type STREQUAL "measurement")
    string(JSON series GET "${line}" series)
    if(NOT series MATCHES "^toy ")
      continue()
    endif()
    string(JSON value GET "${line}" value)
    string(JSON base GET "${line}" baseline series)
    string(JSON ratio GET "${line}" ratio)
    string(JSON nsamples LENGTH "${line}" samples)
    string(JSON ws GET "${line}" params ws)
    string(JSON op GET "${line}" params op)
    # a byte loop: a time per call, three rounds, paired with glibc's
    # same op, and well behind it (Memset_Fleet's calls average ~300 B)
    if(NOT value GREATER 0 OR NOT nsamples EQUAL 3 OR NOT base STREQUAL "glibc ${op}"
       OR NOT ratio GREATER 0 OR NOT ratio LESS 1)
      message(FATAL_ERROR "not a sane peer record: ${line}")
    endif()
    list(APPEND peer_series "${series}@${ws}")
  elseif(type STREQUAL "verdict")
    string(JSON text GET "${line}" text)
    if(text MATCHES "^peer toy is .*/libtoy.so: races its own memset, memcpy; it exports no memmove$")
      set(noted 1)
    endif()
  endif()
endforeach()
list(SORT peer_series)
set(want "toy memcpy@hot;toy memcpy@l1;toy memset@hot;toy memset@l1")
if(NOT peer_series STREQUAL want)
  message(FATAL_ERROR "peer series '${peer_series}', expected '${want}'")
endif()
if(NOT noted)
  message(FATAL_ERROR "no verdict saying what the peer is and races")
endif()

# ---- copy-sweep: the toy's memcpy in all three tables: aligned, misaligned,
# and ending at an unmapped page ----
execute_process(COMMAND ${BENCH}/memkit-exp-copy-sweep --quick min=256 max=2K offsets=few
                        only=libc,memkit peer=${OUT}/libtoy.so --jsonl ${OUT}/copy.jsonl
                RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "copy-sweep with a peer failed (${rc}): ${err}")
endif()
file(STRINGS ${OUT}/copy.jsonl lines)
set(copy_series "")
foreach(line IN LISTS lines)
  string(JSON type GET "${line}" type)
  if(type STREQUAL "measurement")
    string(JSON series GET "${line}" series)
    string(JSON value GET "${line}" value)
    if(series MATCHES "^toy" AND value GREATER 0)
      list(APPEND copy_series "${series}")
    endif()
  endif()
endforeach()
list(REMOVE_DUPLICATES copy_series)
list(SORT copy_series)
if(NOT copy_series STREQUAL "toy;toy misaligned-dst;toy page-end")
  message(FATAL_ERROR "copy-sweep's peer series: '${copy_series}'")
endif()

# ---- copy-sweep's page-end table: a peer slow where a copy ends at a page's
# end (a stand-in for a masked access reaching the unmapped page after it:
# 50 us against a few ns mid-page) is called a cliff; memkit, whose masked
# paths test for the page, is not ----
build_peer(cliff [=[
#include <stddef.h>
#include <stdint.h>
#include <time.h>
void *memcpy(void *d, const void *s, size_t n)
{
    if (((uintptr_t)s + n) % 4096 == 0)
        nanosleep(&(struct timespec){0, 50000}, NULL);
    char *a = d;
    const char *b = s;
    while (n--)
        *a++ = *b++;
    return d;
}
]=])
execute_process(COMMAND ${BENCH}/memkit-exp-copy-sweep --quick min=32 max=32 offsets=few
                        only=memkit peer=${OUT}/libcliff.so --jsonl ${OUT}/cliff.jsonl
                RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE table)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "copy-sweep with the page-end peer failed (${rc}): ${err}")
endif()
if(NOT table MATCHES "copies ending at an unmapped page")
  message(FATAL_ERROR "no page-end table:\n${table}")
endif()
file(STRINGS ${OUT}/cliff.jsonl verdicts REGEX "\"type\":\"verdict\"")
set(cliff_said 0)
set(memkit_said 0)
foreach(line IN LISTS verdicts)
  string(JSON text GET "${line}" text)
  if(text MATCHES "^cliff: a small copy ending at an unmapped page takes at most .*: a cliff \\(2x or more\\)$")
    set(cliff_said 1)
  elseif(text MATCHES "^memkit: a small copy ending at an unmapped page")
    if(text MATCHES "a cliff")
      message(FATAL_ERROR "memkit called a cliff at a page's end: ${text}")
    endif()
    set(memkit_said 1)
  endif()
endforeach()
if(NOT cliff_said OR NOT memkit_said)
  message(FATAL_ERROR "page-end verdicts (cliff ${cliff_said}, memkit ${memkit_said}):\n${verdicts}")
endif()

# ---- fill-regions: the toy's memset, with zeros and with 0x5a ----
execute_process(COMMAND ${BENCH}/memkit-exp-fill-regions --quick min=1K max=4K budget=0.01
                        peer=${OUT}/libtoy.so --jsonl ${OUT}/fill.jsonl
                RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
file(STRINGS ${OUT}/fill.jsonl lines REGEX "\"series\":\"toy\"")
list(LENGTH lines nfill)
if(NOT rc EQUAL 0 OR nfill LESS 4)
  message(FATAL_ERROR "fill-regions with a peer: exit ${rc}, ${nfill} toy records: ${err}")
endif()

# ---- what cannot race: one line each, exit status 2, nothing written ----
file(WRITE ${OUT}/notalib.so "this is text, not a shared library\n")
foreach(bad notalib.so libnone.so missing.so)
  execute_process(COMMAND ${EXP} --quick only=_Fleet processes=1 peer=${OUT}/${bad}
                          --jsonl ${OUT}/bad.jsonl
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REGEX MATCHALL "\n" newlines "${err}")
  list(LENGTH newlines nlines)
  if(NOT rc EQUAL 2 OR NOT nlines EQUAL 1 OR NOT out STREQUAL "" OR EXISTS ${OUT}/bad.jsonl
     OR NOT err MATCHES "^error: size-distributions: peer=${OUT}/${bad}")
    message(FATAL_ERROR "peer=${bad}: exit ${rc}, stderr '${err}', stdout '${out}'")
  endif()
endforeach()
execute_process(COMMAND ${EXP} --check-args peer=${OUT}/libnone.so ERROR_VARIABLE err)
if(NOT err MATCHES "exports none of memset, memcpy, memmove")
  message(FATAL_ERROR "libnone.so refused without saying why: ${err}")
endif()
