# SPDX-License-Identifier: Apache-2.0
"""Runs compared: two runs (`memkit compare`), a fleet's hosts (`memkit fleet`), each judged by memkit.judging."""
