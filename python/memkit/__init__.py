# SPDX-License-Identifier: Apache-2.0
"""The memkit lab's front end: runs the C experiments, keeps their results in
SQLite, compares runs and writes HTML reports."""

__version__ = "0.2.0"
