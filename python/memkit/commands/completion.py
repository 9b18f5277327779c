# SPDX-License-Identifier: Apache-2.0
"""memkit completion: a shell completion script for memkit itself."""

NAME = "completion"
HELP = "print the completion script for bash or zsh (e.g. eval \"$(memkit completion bash)\")"
SHELLS = ("bash", "zsh")


def add_arguments(p):
    p.add_argument("shell", choices=SHELLS, help="the shell to complete for")


def main(args) -> int:
    import shtab   # here only: every memkit command loads this module

    # The command line it was given on (cli.build_parser hands it over), so
    # the script completes every command, this one too, without importing
    # the command line from below it.
    print(shtab.complete(args.command_line, shell=args.shell), end="")
    return 0
