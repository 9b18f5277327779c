# SPDX-License-Identifier: Apache-2.0
"""Tuning the library to this CPU (`memkit tune`): strategies raced, thresholds and variant chosen, evidence kept."""
