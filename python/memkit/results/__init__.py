# SPDX-License-Identifier: Apache-2.0
"""What an experiment produces, in one shape for whoever reads it: its records (schema,
the normalised measurement and verdict) and its result; the lab writes them, the store keeps them."""
