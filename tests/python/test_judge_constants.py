# SPDX-License-Identifier: Apache-2.0
"""One judge: every judging constant is defined in memkit/judging/judge.py (Python)
or beside lab_judge in bench/lab/lab.h (C), nowhere else."""

import ast
import re
from pathlib import Path

from memkit.judging import judge

ROOT = Path(__file__).resolve().parents[2]


def judge_names() -> set[str]:
    return {n for n in vars(judge) if n.isupper()}


def test_no_python_module_defines_a_judging_constant_of_its_own():
    names = judge_names()
    assert {"FDR", "SERIES_EFFECT", "TUNE_ALPHA", "TRY_CONFIDENCE"} <= names
    # the names as the judge spells them, and as their users import them
    plain = names | {n.split("_", 1)[1] for n in names if n.startswith(("TUNE_", "TRY_"))}
    offenders = []
    for path in (ROOT / "python" / "memkit").rglob("*.py"):
        if path.name == "judge.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                offenders += [f"{path.name}: {t.id}" for t in node.targets
                              if isinstance(t, ast.Name) and t.id in plain]
    assert offenders == []


def test_no_c_file_defines_a_judging_constant_of_its_own():
    lab_h = (ROOT / "bench" / "lab" / "lab.h").read_text()
    assert "#define LAB_LOSS_MIN" in lab_h and "#define LAB_LEVEL_EFFECT" in lab_h
    pattern = re.compile(r"#define\s+\w*(LOSS_MIN|EFFECT|ALPHA|MARGIN)\b")
    # the lab's C side: its core and experiments, and the tools built on it (memkit tune's timer)
    sources = [p for d in ("bench", "tools") for p in (ROOT / d).rglob("*.[ch]")]
    assert ROOT / "bench" / "experiments" / "tune" / "tune_experiment.c" in sources
    offenders = [str(p.relative_to(ROOT)) for p in sources
                 if p.name != "lab.h" and pattern.search(p.read_text())]
    assert offenders == []
