# SPDX-License-Identifier: Apache-2.0
"""Judging: does a difference count (the constants of every rule, the statistics)."""
