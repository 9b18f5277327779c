"""The man page and the shell completions, generated from the command line's
own parser, so they never disagree with `memkit --help`.

    python -m memkit.docs --out DIR   writes DIR/memkit.1, DIR/memkit.bash, DIR/_memkit

`make install` and the Python package's build install what this writes;
`memkit completion bash|zsh` prints a completion script directly.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

SHELLS = ("bash", "zsh")


def completion(shell: str) -> str:
    import shtab

    from memkit.cli import build_parser
    return shtab.complete(build_parser(), shell=shell)


def manpage() -> str:
    from build_manpages.manpage import Manpage

    from memkit.cli import build_parser
    parser = build_parser()
    # argparse-manpage takes the page's summary line from the description.
    from memkit import __version__
    return str(Manpage(parser, _data={
        "project_name": "memkit", "version": __version__, "manual_title": "memkit manual",
        "description": "which memory fill/copy method is fastest on this machine"}))


def write_all(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = {out / "memkit.1": manpage(), out / "memkit.bash": completion("bash"),
             out / "_memkit": completion("zsh")}
    for path, text in files.items():
        path.write_text(text)
    return list(files)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m memkit.docs", description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, type=Path, help="directory to write into")
    args = p.parse_args(argv)
    for path in write_all(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
