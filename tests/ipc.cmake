# SPDX-License-Identifier: Apache-2.0
# The ipc-copy experiment's shared-memory ring, a component of its own
# (bench/experiments/ipc_ring/); its test builds it in, so the sanitizer builds, which
# have no bench/, run it too.
if(TARGET test_ipc_ring)
  target_sources(test_ipc_ring PRIVATE ${PROJECT_SOURCE_DIR}/bench/experiments/ipc_ring/ipc_ring.c)
  target_include_directories(test_ipc_ring PRIVATE ${PROJECT_SOURCE_DIR}/bench/experiments/ipc_ring)
endif()
