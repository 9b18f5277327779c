"""The man page says what argparse cannot: the environment, the files, the
exit statuses and examples (issue #25), each example a command the parser
takes."""

import re
import shlex

from memkit import docs
from memkit.cli import build_parser


def section(page: str, heading: str) -> str:
    m = re.search(rf"^\.SH {heading}\n(.*?)(?=^\.SH |\Z)", page, re.M | re.S)
    assert m, f"no {heading} section"
    return m.group(1)


def test_the_man_page_has_environment_files_exit_status_and_examples():
    page = docs.manpage()
    env = section(page, "ENVIRONMENT")
    for var in ("MEMKIT_DB", "MEMKIT_TUNABLES", "MEMKIT_PROFILE", "MEMKIT_RECORD", "MEMKIT_HOST"):
        assert f".B {var}\n" in env, var
    files = section(page, "FILES")
    assert "results/memkit.db" in files and "~/.local/share/memkit/memkit.db" in files and ".memkit-files" in files
    status = section(page, "EXIT STATUS")
    # every status a command exits with, memkit try's own two included
    from memkit.commands.try_program import OUTPUTS_DIFFER
    from memkit.whole_program import ProgramNotStarted
    assert [int(s) for s in re.findall(r"^\.B (\d+)$", status, re.M)] == \
        [0, 1, 2, OUTPUTS_DIFFER, 70, ProgramNotStarted.exit_status, 130]
    examples = section(page, "EXAMPLES")
    commands = re.findall(r"^\.B (memkit .*)$", examples, re.M)
    assert len(commands) >= 5
    parser = build_parser()
    for command in commands:   # each one parses as written (up to a redirection)
        words = shlex.split(command.split(">")[0])[1:]
        args, unknown = parser.parse_known_args(words)
        assert not unknown and args.command, command
