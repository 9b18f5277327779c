# SPDX-License-Identifier: Apache-2.0
"""Judging: does a difference count (constants, statistics), two runs compared, a fleet's hosts compared."""
