# SPDX-License-Identifier: Apache-2.0
"""The lab: the C experiments found and run, their records and rankings read, the machine they ran on."""
