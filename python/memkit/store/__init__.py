# SPDX-License-Identifier: Apache-2.0
"""Where results are kept: the runs database, a spill file when it refuses a run, the rule for files written."""
