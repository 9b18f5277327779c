# SPDX-License-Identifier: Apache-2.0
"""A run of the suite end to end (`memkit run`, `memkit record --predict`): the experiments run
one after another, each stored as it finishes, and the summary."""
