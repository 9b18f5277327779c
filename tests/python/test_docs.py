# SPDX-License-Identifier: Apache-2.0
"""The man page says what argparse cannot: the environment, the files, the
exit statuses and examples (issue #25), each example a command the parser
takes; docs/library.md's and docs/strategy.md's tables of the tunables are what
the library prints of its own tables; every experiment `memkit list` names has
its page in docs/experiments/, whose arguments are what the experiment's
--help prints and whose commands run; and every relative link of README.md and
docs/ leads to a file (and a heading) that exists."""

import difflib
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, cli_env, real_bench_dir, run_cli
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
    from memkit.comparison.two_runs import UNJUDGED_STATUS
    from memkit.programs.whole_program import OUTPUTS_DIFFER, ProgramNotStarted
    assert OUTPUTS_DIFFER == UNJUDGED_STATUS   # the table's one line for a check's third answer
    assert [int(s) for s in re.findall(r"^\.B (\d+)$", status, re.M)] == \
        [0, 1, 2, OUTPUTS_DIFFER, 70, ProgramNotStarted.NOT_EXECUTABLE, ProgramNotStarted.NOT_FOUND, 130]
    examples = section(page, "EXAMPLES")
    commands = re.findall(r"^\.B (memkit .*)$", examples, re.M)
    assert len(commands) >= 5
    parser = build_parser()
    for command in commands:   # each one parses as written (up to a redirection)
        words = shlex.split(command.split(">")[0])[1:]
        args, unknown = parser.parse_known_args(words)
        assert not unknown and args.command, command


def test_the_docs_table_of_exit_statuses_is_the_man_pages():
    have = marked_table((REPO / "docs/lab.md").read_text(), "python -m memkit.docs --exit-statuses")
    assert have == docs.exit_status_markdown(), "put `python -m memkit.docs --exit-statuses` in docs/lab.md"


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


def test_a_bad_tunable_names_where_the_tunables_are():
    # It once said "(see README)", which no longer lists them.
    p = run_cli("env", "--tunables", "--build", real_bench_dir(), env=cli_env(MEMKIT_TUNABLES="no_such_tunable=1"))
    line = next(line for line in p.stderr.splitlines() if "'no_such_tunable'" in line)
    assert line.endswith("not one of memkit's tunables (`memkit env --tunables` lists them; docs/library.md); "
                         "default kept"), line
    assert "<!-- `memkit env --tunables --markdown`" in (REPO / "docs" / "library.md").read_text()


# The experiments' pages: docs/experiments/NAME.md per experiment, indexed by
# docs/experiments/README.md.
EXPERIMENT_DOCS = REPO / "docs" / "experiments"
EXPERIMENT_PAGES = sorted(p.stem for p in EXPERIMENT_DOCS.glob("*.md") if p.name != "README.md")


def listed_experiments() -> list[str]:
    """The names `memkit list` prints (each line that does not start with
    blanks: the blank-led lines are the seeds)."""
    p = run_cli("list", "--build", real_bench_dir())
    assert p.returncode == 0, p.stderr
    return [line.split()[0] for line in p.stdout.splitlines() if line.strip() and not line[0].isspace()]


def test_every_experiment_has_its_page_and_the_index_links_it():
    listed = listed_experiments()
    assert len(listed) >= 10, listed
    missing = sorted(set(listed) - set(EXPERIMENT_PAGES))
    assert not missing, f"no page docs/experiments/NAME.md for: {', '.join(missing)}"
    stale = sorted(set(EXPERIMENT_PAGES) - set(listed))
    assert not stale, f"pages for experiments `memkit list` does not know: {', '.join(stale)}"
    index = (EXPERIMENT_DOCS / "README.md").read_text()
    for name in listed:
        assert f"[{name}]({name}.md)" in index, f"docs/experiments/README.md does not link {name}.md"
        assert (EXPERIMENT_DOCS / f"{name}.md").read_text().startswith(f"# {name}\n"), name


def help_arguments(name: str) -> str:
    """What `memkit-exp-NAME --help` prints from its `arguments:` line on."""
    p = subprocess.run([str(real_bench_dir() / f"memkit-exp-{name}"), "--help"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    at = p.stdout.find("arguments:")
    assert at >= 0, f"memkit-exp-{name} --help prints no arguments: line"
    return p.stdout[at:]


def fenced_after_mark(text: str, mark: str) -> str:
    """The fenced block right after the one comment line starting with mark."""
    lines = text.splitlines(keepends=True)
    marks = [i for i, line in enumerate(lines) if line.startswith(mark)]
    assert len(marks) == 1, f"want one block marked {mark!r}, found {len(marks)}"
    assert lines[marks[0] + 1].startswith("```"), f"no fenced block after {mark!r}"
    block = []
    for line in lines[marks[0] + 2:]:
        if line.startswith("```"):
            return "".join(block)
        block.append(line)
    raise AssertionError(f"the block after {mark!r} is not closed")


@pytest.mark.parametrize("name", EXPERIMENT_PAGES)
def test_each_experiment_page_lists_the_arguments_its_help_prints(name):
    command = f"build/bench/memkit-exp-{name} --help"
    have = fenced_after_mark((EXPERIMENT_DOCS / f"{name}.md").read_text(), f"<!-- `{command}`")
    want = help_arguments(name)
    diff = "".join(difflib.unified_diff(have.splitlines(keepends=True), want.splitlines(keepends=True),
                                        f"docs/experiments/{name}.md", command))
    assert have == want, f"docs/experiments/{name}.md's arguments are not what `{command}` prints; " \
                         f"put its lines from `arguments:` on there:\n{diff}"


def sh_lines(text: str) -> list[str]:
    """The lines of the ```sh blocks, each without its comment."""
    return [line.split(" #")[0].strip()
            for block in re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S) for line in block.splitlines()]


@pytest.mark.parametrize("name", EXPERIMENT_PAGES)
def test_each_experiment_pages_run_commands_parse_and_their_arguments_are_taken(name):
    runs = [line for line in sh_lines((EXPERIMENT_DOCS / f"{name}.md").read_text())
            if line.startswith("memkit run")]
    assert len(runs) >= 2, f"docs/experiments/{name}.md shows no way to run it"
    parser = build_parser()
    for line in runs:
        args, unknown = parser.parse_known_args(shlex.split(line)[1:])
        assert not unknown and args.command == "run", line
        words = args.experiments
        assert [w for w in words if "=" not in w] == [name], f"{line}: runs another experiment than {name}"
        # Its key=value words as the experiment checks them, but those that
        # name files only the reader has (a recording, a peer library).
        given = [w for w in words if "=" in w and not w.startswith(("data=", "peer="))]
        p = subprocess.run([str(real_bench_dir() / f"memkit-exp-{name}"), "--check-args", *given],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, f"{line}: {p.stderr.strip()}"


# Every relative link of the front page and the documentation.
LINKED_DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)\)")


def prose(text: str) -> str:
    """The text without fenced blocks, inline code and HTML comments."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    return re.sub(r"`(?:[^`\n]|\n(?!\n))*`", "", text)   # a code span may wrap, not span paragraphs


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation
    dropped, blanks as hyphens, a repeated one numbered."""
    seen: dict[str, int] = {}
    found = set()
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.M | re.S)
    for heading in re.findall(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, re.M):
        heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(prose(page.read_text())):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):   # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target} (no such heading)")
    return broken


@pytest.mark.parametrize("page", LINKED_DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_leads_somewhere(page):
    broken = broken_links(page)
    assert not broken, f"{page.relative_to(REPO)}: broken links: {', '.join(broken)}"


def test_the_link_check_finds_a_broken_link(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.md").write_text("# B\n\n## Zen 5 (issue #10)\n\n## Intel: glibc's `rep movsb`\n")
    page = tmp_path / "a.md"
    page.write_text("# A\n\n[b](sub/b.md) [zen](sub/b.md#zen-5-issue-10) [rep](sub/b.md#intel-glibcs-rep-movsb)\n"
                    "[dir](sub/) [web](https://example.org/x) [here](#a) `[code](nowhere.md)`\n"
                    "```\n[block](nowhere.md)\n```\n"
                    "[gone](c.md) [no heading](sub/b.md#zen-4) [nor here](#b) ![img](img.png)\n")
    assert broken_links(page) == ["c.md (no such file)", "sub/b.md#zen-4 (no such heading)",
                                  "#b (no such heading)", "img.png (no such file)"]


# The README as a newcomer follows it on a fresh clone: its ```sh blocks in
# order, each line as written (comments dropped), by bash in a scratch
# directory holding the checkout's examples/.  Not here: `pip install .`
# (this checkout's memkit stands in; test_packaging installs it) and the
# block that links through pkg-config (an installed memkit's files:
# test_packaging, the install test).  Two changes keep it under 20 s: the
# lab's experiments are the fake ones (`run --quick` takes minutes), and
# try stops at 6 pairs (--runs 6), the fewest with an interval, not at its
# budget of a minute.
README = REPO / "README.md"


def readme_blocks() -> list[list[str]]:
    return [[line.split(" #")[0].strip() for line in block.splitlines() if line.split(" #")[0].strip()]
            for block in re.findall(r"^```sh\n(.*?)^```", README.read_text(), re.M | re.S)]


def masked(line: str) -> str:
    return re.sub(r"\d+(\.\d+)?", "#", line)


def test_the_readmes_commands_run_as_written_in_its_order(tmp_path):
    from conftest import make_fake_build
    work, bin_dir = tmp_path / "work", tmp_path / "bin"
    work.mkdir()
    bin_dir.mkdir()
    (work / "examples").symlink_to(REPO / "examples")
    fake = make_fake_build(tmp_path / "build", ["ok", "zeta"])
    (fake / "libmemkit_preload.so").symlink_to(real_bench_dir().resolve().parent / "libmemkit_preload.so")
    memkit = bin_dir / "memkit"
    memkit.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m memkit \"$@\"\n")
    memkit.chmod(0o755)
    env = cli_env(MEMKIT_BUILD=str(fake), XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "config"))
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"

    ran, skipped = [], []
    for block in readme_blocks():
        if any("pkg-config" in line for line in block):
            skipped.append(block)
            continue
        lines = [line for line in block if line != "pip install ."]
        lines = [line.replace("memkit try --", "memkit try --runs 6 --", 1) for line in lines]
        for line in lines:
            p = subprocess.run(["bash", "-c", line], cwd=work, env=env, capture_output=True, text=True, timeout=120)
            assert p.returncode == 0, f"README: `{line}` exited {p.returncode}:\n{p.stdout}\n{p.stderr}"
            ran.append((line, p))
    assert len(skipped) == 1, skipped
    commands = [line for line, _ in ran]
    assert [c.split()[1] for c in commands if c.startswith("memkit ")] == \
        ["try", "env", "system-check", "run", "report", "compare"], commands

    # try: its output has the shape of the README's sample, from the same program
    (_, tried), = [(line, p) for line, p in ran if line.startswith("memkit try")]
    (sample,) = [body.splitlines() for lang, body in re.findall(r"^```(\w*)\n(.*?)^```", README.read_text(), re.M | re.S)
                 if not lang and "memkit try: " in body]
    got = tried.stdout.splitlines()
    assert sample[0] == got[0] == "1020128"   # the program's own output
    command = "python3 examples/programs/copy_bytes.py 8000"
    assert sample[1].startswith(f"memkit try: {command} in ") and got[1].startswith(f"memkit try: {command} in ")
    budget = re.search(r"the budget of (\d+) s", sample[1])
    default = build_parser().command_parsers["try"].get_default("budget")
    assert budget is None or float(budget.group(1)) == default, f"the README's sample says a budget of " \
        f"{budget.group(1)} s; try's default is {default:g} s"
    assert [masked(line) for line in sample[2:5]] == [masked(line) for line in got[2:5]]
    # (and where glibc's thresholds disagree with the fingerprint, here the fake experiments' CPU, the setting to try)
    bottom = r"^python3: (\d\.\d+x faster with memkit|no difference beyond the noise|\d\.\d+x slower with memkit) " \
             r"\(\d\.\d+-\d\.\d+, \d+ pairs\)(; glibc's [^;]+ to time glibc tuned beside memkit)?$"
    assert re.match(bottom, sample[-1]) and re.match(bottom, got[-1]), (sample[-1], got[-1])

    # the preload took the program over, and the program said what it says without it
    (preloaded,) = [p for line, p in ran if line.startswith("LD_PRELOAD=")]
    assert preloaded.stdout == "1020128\n" and "ld.so" not in preloaded.stderr, preloaded.stderr

    # After the try, the lab's run has nothing to be compared with (the README's order
    # once made run name the try, and compare print only "no measurement is in both runs")
    (lab,) = [p for line, p in ran if line.startswith("memkit run")]
    assert "memkit compare" not in lab.stdout
    (compared,) = [p for line, p in ran if line.startswith("memkit compare")]
    said = [line for line in compared.stdout.splitlines() if "busy machine" not in line]
    assert said[1:] == ["note: no two runs share a measurement; these are the last two",
                        f"no measurement is in both runs: run 1 tried `{command}`; run 2 ran the lab's experiments "
                        "(quick grid)"], compared.stdout
    assert (tmp_path / "data" / "memkit" / "memkit.db").is_file()
    assert (tmp_path / "data" / "memkit" / "report" / "index.html").is_file()


def example_quote(page: str) -> str:
    """The C block of architecture.md's "How an experiment is written"."""
    part = page.split("## How an experiment is written", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```c\n(.*?)^```", part, re.M | re.S)
    assert len(blocks) == 1, f"{len(blocks)} C blocks in the section, one expected"
    return blocks[0]


def test_the_architecture_pages_example_experiment_is_the_built_one():
    """The page quotes docs/example_experiment.c as it is (tests/lab.cmake builds and runs that
    file, lab_example_experiment): an edit to one without the other fails here."""
    page = (REPO / "docs" / "architecture.md").read_text()
    source = (REPO / "docs" / "example_experiment.c").read_text()
    quote = example_quote(page)
    assert len(quote.splitlines()) > 20, "the quote is not the example's state, kernel and grid"
    assert quote in source, "docs/architecture.md's example differs from docs/example_experiment.c:\n" + "".join(
        difflib.unified_diff(source.splitlines(True), quote.splitlines(True), "example_experiment.c", "page"))
    lines = len(source.splitlines())
    assert f"({lines} lines;" in page, f"the page gives the example's length, {lines} lines, wrongly"
    assert example_quote(page.replace("static int run", "static int  run")) not in source
