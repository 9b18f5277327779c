# SPDX-License-Identifier: Apache-2.0
"""A user's program under the preload library: recorded (`memkit record`), timed with and without it (`memkit try`)."""
