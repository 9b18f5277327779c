# SPDX-License-Identifier: Apache-2.0
"""The exceptions the command line turns into a one-line message."""


class MemkitError(Exception):
    """A problem the user can act on: printed as one line, exit status 1."""
    exit_status = 1


class UsageError(MemkitError):
    """Something the user typed does not hold (an experiment's argument, an
    option): refused before anything runs, exit status 2 as for argparse's
    own usage errors."""
    exit_status = 2
