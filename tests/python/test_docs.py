# SPDX-License-Identifier: Apache-2.0
"""The man page says what argparse cannot: the environment, the files, the
exit statuses and examples (issue #25), each example a command the parser
takes; docs/library.md's and docs/strategy.md's tables of the tunables are what
the library prints of its own tables."""

import difflib
import re
import shlex

import pytest

from conftest import REPO, real_bench_dir, run_cli
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
    from memkit.programs.whole_program import OUTPUTS_DIFFER, ProgramNotStarted
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


def marked_table(text: str, command: str) -> str:
    """The lines after the comment saying `command` prints them, up to the
    first blank line."""
    lines = text.splitlines(keepends=True)
    marks = [i for i, line in enumerate(lines) if line.startswith(f"<!-- `{command}`")]
    assert len(marks) == 1, f"want one table marked as the output of {command}, found {len(marks)}"
    table = []
    for line in lines[marks[0] + 1:]:
        if not line.strip():
            break
        table.append(line)
    return "".join(table)


@pytest.mark.parametrize("doc, command", [("docs/library.md", "memkit env --tunables --markdown"),
                                          ("docs/strategy.md", "memkit env --strategies --markdown")])
def test_the_docs_tables_of_tunables_are_the_librarys(doc, command):
    p = run_cli(*command.split()[1:], "--build", real_bench_dir())
    assert p.returncode == 0, p.stderr
    have = marked_table((REPO / doc).read_text(), command)
    diff = "".join(difflib.unified_diff(have.splitlines(keepends=True), p.stdout.splitlines(keepends=True),
                                        doc, command))
    assert have == p.stdout, f"{doc}'s table is not what the code says; put `{command}` there:\n{diff}"
