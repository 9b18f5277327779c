# SPDX-License-Identifier: Apache-2.0
"""Where memkit stands among the methods timed beside it, as the lab judged
it: the rows of the report's headline, read from each "fastest" verdict's
data (bench/lab/ranking.c writes them), never judged again here.

A ranking's fields are the ranking and ranking_point objects of
bench/lab/records.def: per point the fastest method, the methods within its
noise, and memkit against the fastest other method (verdict 1 faster, -1
slower beyond the noise, 0 neither); on an ordered axis, the [first, last]
points of each range one method leads.  The "loss" verdicts are the points
at -1, so a headline row is marked a loss exactly where a loss verdict is.
"""

from __future__ import annotations

from typing import Optional


def rankings(verdicts: list[dict]) -> list[tuple[str, dict]]:
    """[(experiment, ranking)] of the "fastest" verdicts that carry one."""
    return [(v.get("experiment", ""), v["data"]) for v in verdicts
            if v.get("kind") == "fastest" and isinstance(v.get("data"), dict) and v["data"].get("points")]


def _leads(p: dict, name: str) -> bool:
    return p["fastest"] == name or name in p.get("tied", ())


def ranges(rk: dict) -> list[list[dict]]:
    """The ranges of consecutive points one method leads, as the lab cut
    them for its verdict's text (an ordered ranking's "ranges"); a point
    each where it gave none."""
    pts = rk["points"]
    cuts = rk.get("ranges") or [[i, i] for i in range(len(pts))]
    return [pts[a:b + 1] for a, b in cuts]


def standing(points: list[dict], memkit: str) -> dict:
    """memkit over these points: {"state", "losses", "worst"}; state is
    "slower" (beyond the noise at some point: a loss), "fastest" (it leads
    every point), "tied" (the fastest or within its noise at every point)
    or "level" (never slower beyond the noise, not always within it)."""
    losses = [p for p in points if p.get("verdict") == -1]
    if losses:
        return {"state": "slower", "losses": len(losses), "worst": max(p["slower"] for p in losses)}
    if all(p["fastest"] == memkit for p in points):
        state = "fastest"
    elif all(_leads(p, memkit) for p in points):
        state = "tied"
    else:
        state = "level"
    return {"state": state, "losses": 0, "worst": None}


def _span(points: list[dict]) -> str:
    return points[0]["at"] if len(points) == 1 else f"{points[0]['at']}..{points[-1]['at']}"


def headline_rows(verdicts: list[dict]) -> list[dict]:
    """[{"experiment", "what", "where", "fastest", "memkit", "state",
    "losses", "points", "worst"}]: an ordered ranking (sizes) gives a row
    per range one method leads; a ranking of cases (distributions) one row,
    its methods with the cases each won."""
    out = []
    for exp, rk in rankings(verdicts):
        memkit = rk.get("memkit") or ""
        groups = ranges(rk) if rk.get("ordered") else [rk["points"]]
        for pts in groups:
            if rk.get("ordered"):
                where, fastest = _span(pts), pts[0]["fastest"]
            else:
                won: dict[str, int] = {}
                for p in pts:
                    won[p["fastest"]] = won.get(p["fastest"], 0) + 1
                where = f"{len(pts)} cases"
                fastest = ", ".join(f"{m} ({n} of {len(pts)})"
                                    for m, n in sorted(won.items(), key=lambda kv: -kv[1]))
            out.append(dict(experiment=exp, what=rk.get("what", ""), where=where, fastest=fastest,
                            memkit=memkit, points=len(pts), **standing(pts, memkit)))
    return out


def standing_text(row: dict) -> str:
    """memkit's cell of a headline row, in words."""
    state = row["state"]
    if state == "slower":
        where = "" if row["points"] == 1 else f" at {row['losses']} of {row['points']} points,"
        return f"slower beyond the noise{where} up to {row['worst']:.2f}x"
    return {"fastest": "fastest", "tied": "within the noise of the fastest",
            "level": "not slower beyond the noise"}[state]


def is_loss(row: dict) -> bool:
    return row["state"] == "slower"


def memkit_series(verdicts: list[dict], experiment: Optional[str] = None) -> set[str]:
    """The names the lab gave memkit's own routine in its rankings."""
    return {rk["memkit"] for exp, rk in rankings(verdicts)
            if rk.get("memkit") and (experiment is None or exp == experiment)}
