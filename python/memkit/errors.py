"""The one exception the command line turns into a one-line message."""


class MemkitError(Exception):
    """A problem the user can act on: printed as one line, exit status 1."""
    exit_status = 1
