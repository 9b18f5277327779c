# SPDX-License-Identifier: Apache-2.0
"""The HTML reports: one run's (headline, plots, tables, a recorded program's picture) and the fleet's."""
