# SPDX-License-Identifier: Apache-2.0
"""memkit completion: a shell completion script for memkit itself."""

from memkit import docs

NAME = "completion"
HELP = "print the completion script for bash or zsh (e.g. eval \"$(memkit completion bash)\")"


def add_arguments(p):
    p.add_argument("shell", choices=docs.SHELLS, help="the shell to complete for")


def main(args) -> int:
    print(docs.completion(args.shell), end="")
    return 0
