# SPDX-License-Identifier: Apache-2.0
# test_contracts checks the trap only where the library was built to check
# its callers' contracts.
if(TARGET test_contracts AND MEMKIT_DEBUG_CONTRACTS)
  target_compile_definitions(test_contracts PRIVATE MK_DEBUG_CONTRACTS)
endif()
