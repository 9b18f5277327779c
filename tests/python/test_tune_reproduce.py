# SPDX-License-Identifier: Apache-2.0
"""memkit tune's moves confirmed in independent batches: the between-batch
rule on synthetic batches (a gain one batch alone shows is not sure; a
plateau is no move; a threshold's value rounded toward the default as far
as the batches allow), and the small-size design's moves per function."""

from __future__ import annotations

import math
import random

from memkit.judging.between_batches import Batches
from memkit.tuning import catalogue, level_choice, reproduce, tune

MiB = 1 << 20


class CopyPaths(catalogue.Paths):
    """The copy runs non-temporal stores from nt_copy_threshold on, the loop
    below it, as the library does (asked of it in test_tune)."""

    def __init__(self):
        super().__init__(None)

    def ask(self, spec, op, sizes):
        t = catalogue.parse_tunables(spec).get("nt_copy_threshold")
        return ["nt" if t is not None and s >= t else "loop" for s in sizes]


def batches_of(cells, factor, batches=4, rounds=4, seed=3):
    """Per batch, per-round ns of "defaults" and "tuned" (1% noise within a
    batch): the tuned side `factor(batch, cell)` times faster."""
    rng = random.Random(seed)
    out = []
    for b in range(batches):
        got = {"defaults": {}, "tuned": {}}
        for c in cells:
            base = [100.0 * (1 + rng.gauss(0, 0.01)) for _ in range(rounds)]
            got["defaults"][c] = base
            got["tuned"][c] = [x / factor(b, c) * (1 + rng.gauss(0, 0.01)) for x in base]
        out.append(got)
    return out


# the tuning grid's points, two an octave, and the sizes between
GRID = [4 * MiB, 5 * MiB + MiB * 3 // 4, 8 * MiB, 11 * MiB + MiB // 2, 16 * MiB, 22 * MiB, 32 * MiB]
SIZES = sorted(GRID + [4 * MiB + MiB * 3 // 4, 6 * MiB + MiB * 3 // 4, 9 * MiB + MiB // 2, 13 * MiB + MiB // 2,
                       19 * MiB])
CELLS = [("copy", s) for s in SIZES]
DEFAULTS = {"nt_copy_threshold": 16 * MiB}


def lowered_to(value):
    return tune.Choice("nt_copy_threshold", 16 * MiB, value, "timed stage", True)


def confirmed(factor, value=8 * MiB, **kw):
    (got,) = reproduce.confirm([lowered_to(value)], DEFAULTS, CELLS, batches_of(CELLS, factor, **kw),
                               CopyPaths(), GRID)
    return got


def test_the_rule_needs_every_batch_the_same_way_beyond_their_spread_and_the_margin():
    assert Batches((0.20, 0.18, 0.22, 0.19)).verdict() == 1
    assert Batches((-0.20, -0.18, -0.22, -0.19)).verdict() == -1
    assert Batches((0.20, 0.18, 0.22, -0.01)).verdict() == 0      # one batch disagrees
    assert Batches((0.01, 0.30, 0.02, 0.25)).verdict() == 0       # the batches differ more than the mean
    assert Batches((0.020, 0.021, 0.019, 0.020)).verdict() == 0   # agreed, but under the 3% margin
    assert Batches((0.2,)).verdict() == 0                         # one batch tells no between-batch noise
    assert "batches 1.20-1.25x" in Batches((math.log(1.2), math.log(1.25))).says()


def test_a_move_every_batch_finds_is_kept_at_its_value():
    got = confirmed(lambda b, c: 1.25 if c[1] < 16 * MiB else 1.0)
    assert got.kept and got.value == 8 * MiB and not got.given_back
    assert sorted(c[1] for c in got.cells) == [s for s in SIZES if 8 * MiB <= s < 16 * MiB]
    assert got.says().startswith("nt_copy_threshold: 16 MiB -> 8 MiB: 1.25x")


def test_a_gain_one_batch_alone_shows_is_not_sure_and_keeps_the_default():
    # within each batch the rounds agree to 1%: only the batches tell this apart from a spell
    got = confirmed(lambda b, c: 1.3 if b == 0 and c[1] < 16 * MiB else 1.0)
    assert not got.kept and got.value == 16 * MiB
    assert got.says().startswith("nt_copy_threshold: not sure (8 MiB-13.5 MiB:") and "default 16 MiB kept" in got.says()
    choices = reproduce.settle([got], [lowered_to(8 * MiB)])
    assert not choices[0].moved and choices[0].value == 16 * MiB and "not sure" in choices[0].why


def test_a_plateau_below_the_default_is_no_move():
    got = confirmed(lambda b, c: 1.0 + 0.01 * (b - 1.5))
    assert not got.kept


def test_the_value_goes_toward_the_default_by_octaves_over_sizes_that_ran_equal():
    # timed from 4 MiB: equal at 4-6.75 MiB, faster from 8 MiB: the octave 8 MiB is kept
    got = confirmed(lambda b, c: 1.25 if 8 * MiB <= c[1] < 16 * MiB else 1.0, value=4 * MiB)
    assert got.kept and got.value == 8 * MiB
    assert sorted(c[1] for c in got.given_back) == [s for s in SIZES if s < 8 * MiB]
    assert "(proposed 4 MiB, timed from 4 MiB; 4 MiB-6.8 MiB equal within the between-batch noise" in got.says()
    (choice,) = reproduce.settle([got], [lowered_to(4 * MiB)])
    assert choice.moved and choice.value == 8 * MiB and "(proposed 4 MiB)" in choice.why


def test_a_value_half_an_octave_apart_is_rounded_to_the_octave():
    # equal at 8-9.5 MiB, faster at 11.5-13.5 MiB: the batches cannot tell 8 from 11.5 MiB between runs
    got = confirmed(lambda b, c: 1.25 if 11 * MiB <= c[1] < 16 * MiB else 1.0)
    assert got.kept and got.value == 8 * MiB


def test_a_move_stops_short_of_giving_back_a_gain_the_batches_agree_on():
    # faster everywhere it moves: every point toward the default would give some back
    got = confirmed(lambda b, c: 1.25 if c[1] < 16 * MiB else 1.0)
    assert got.value == 8 * MiB


def test_the_batches_look_one_grid_point_beyond_the_proposal_whichever_it_was():
    # one run proposes 11.5 MiB, the next 8 MiB: both are timed from a point beyond and land on the octave
    faster_from_8 = lambda b, c: 1.25 if c[1] < 16 * MiB else 1.0
    for proposal in (GRID[3], 8 * MiB):
        timed = reproduce.reach(lowered_to(proposal), GRID)
        assert timed == (8 * MiB if proposal == GRID[3] else GRID[1])
        (got,) = reproduce.confirm([lowered_to(timed)], DEFAULTS, CELLS, batches_of(CELLS, faster_from_8),
                                   CopyPaths(), GRID, {"nt_copy_threshold": proposal})
        assert got.kept and got.value == 8 * MiB and got.proposed == proposal
    assert reproduce.reach(lowered_to(GRID[3]), GRID) == 8 * MiB
    assert reproduce.reach(lowered_to(GRID[0]), GRID) == GRID[0]   # the grid's first point: nothing below
    assert reproduce.reach(tune.Choice("parallel_threshold", 4 * MiB, 8 * MiB, "", True), GRID) == GRID[3]
    assert reproduce.reach(tune.Choice("nt_copy_threshold", 16 * MiB, None, "", True), GRID) is None


def test_a_move_slower_at_some_size_is_not_kept_there():
    # 1.3x at 11.5-13.5 MiB, 0.8x at 8-9.5 MiB in every batch: the move to 8 MiB hurts
    got = confirmed(lambda b, c: 1.3 if 11 * MiB <= c[1] < 16 * MiB else 0.8 if c[1] < 16 * MiB else 1.0)
    assert got.kept and got.value == GRID[3]   # only where it helps: no octave holds, the half octave does


def scored(function, geomean, worst):
    """A LevelScore with this geometric mean and worst level (two levels)."""
    return level_choice.LevelScore("x", function, {"l1": geomean * geomean / worst, "dram": worst}, ("l1", "dram"))


class PoolPaths(CopyPaths):
    """And the pool's copy: one thread or the pool by parallel_threshold,
    then the copy's own path by nt_copy_threshold."""

    def ask(self, spec, op, sizes):
        if op != "pcopy":
            return super().ask(spec, op, sizes)
        t = catalogue.parse_tunables(spec).get("parallel_threshold")
        return [("pool " if t is not None and s >= t else "one ") + p
                for s, p in zip(sizes, super().ask(spec, "copy", sizes))]


def test_a_size_two_moves_decide_does_not_sink_the_move_with_sizes_of_its_own():
    # the pool from 8 MiB is slower (0.8x) on the pool's copies, which the copy's move also decides
    cells = CELLS + [("pcopy", s) for s in SIZES]
    moves = [lowered_to(8 * MiB), tune.Choice("parallel_threshold", 32 * MiB, 8 * MiB, "timed stage", True)]
    factor = lambda b, c: 0.8 if c[0] == "pcopy" and 8 * MiB <= c[1] < 32 * MiB else 1.25 if c[1] < 16 * MiB else 1.0
    got = {c.choice.name: c for c in reproduce.confirm(moves, dict(DEFAULTS, parallel_threshold=32 * MiB), cells,
                                                       batches_of(cells, factor), PoolPaths(), GRID)}
    copy, pool = got["nt_copy_threshold"], got["parallel_threshold"]
    assert copy.kept and copy.value == 8 * MiB and {c[0] for c in copy.cells} == {"copy"}
    assert not pool.kept and pool.hurt


class WindowPaths(CopyPaths):
    """rep movsb from rep_movsb_threshold below rep_movsb_stop, else the copy's own path."""

    def ask(self, spec, op, sizes):
        t = catalogue.parse_tunables(spec)
        lo, hi = t.get("rep_movsb_threshold"), t.get("rep_movsb_stop")
        return ["rep" if lo is not None and s >= lo and (hi is None or s < hi) else p
                for s, p in zip(sizes, super().ask(spec, op, sizes))]


def test_the_end_of_a_window_whose_start_is_not_sure_goes_back_to_its_default():
    # rep movsb from 8 MiB ran equal to the loop; its end at 11.5 MiB "won" only against rep movsb beyond it
    moves = [tune.Choice("rep_movsb_threshold", None, 8 * MiB, "", True),
             tune.Choice("rep_movsb_stop", None, GRID[3], "", True)]
    defaults = dict(DEFAULTS, rep_movsb_threshold=None, rep_movsb_stop=None)
    got = reproduce.confirm(moves, defaults, CELLS, batches_of(CELLS, lambda b, c: 1.3 if c[1] >= 16 * MiB else 1.0),
                            WindowPaths(), GRID)
    assert [c.kept for c in got] == [False, False] and got[1].alone
    assert got[1].says() == ("rep_movsb_stop: not sure (without the moves not sure it changes no re-timed size); "
                             "default never kept")


def test_small_design_moves_are_kept_per_function_only_where_every_batch_agrees():
    moves = [tune.Choice("memmove", "evex", "avx2", "levels", True),
             tune.Choice("memset", "evex", "avx2", "levels", True)]
    scores = [{"defaults": {"memmove": scored("memmove", 1.0, 0.95), "memset": scored("memset", 1.0, 0.95)},
               "tuned": {"memmove": scored("memmove", 1.0 + (0.04 if b % 2 else -0.02), 0.95),
                         "memset": scored("memset", 1.10 + 0.01 * b, 0.95)}}
              for b in range(4)]
    got = [reproduce.design_confirmed(fn, [m], scores) for fn, m in zip(("memmove", "memset"), moves)]
    assert [d.kept for d in got] == [False, True]
    assert got[0].says().startswith("memmove (memmove evex -> avx2): not sure (")
    settled = reproduce.settle_design(got, moves)
    assert [(c.name, c.value, c.moved) for c in settled] == [("memmove", "evex", False), ("memset", "avx2", True)]


def test_a_design_at_the_floor_is_not_sure_in_either_direction():
    # evex 1.4x faster over the levels, but its DRAM level sits on the 0.85x floor: 0.84-0.86 by batch
    move = [tune.Choice("memmove", "avx2", "evex", "levels", True)]
    at_floor = [{"defaults": {"memmove": scored("memmove", 1.13, 0.98)},
                 "tuned": {"memmove": scored("memmove", 1.6, 0.84 + 0.01 * (b % 3))}} for b in range(4)]
    assert not reproduce.design_confirmed("memmove", move, at_floor).kept
    above = [{"defaults": {"memmove": scored("memmove", 1.13, 0.98)},
              "tuned": {"memmove": scored("memmove", 1.6, 0.90 + 0.01 * (b % 2))}} for b in range(4)]
    assert reproduce.design_confirmed("memmove", move, above).kept
    # the defaults' design below the floor in every batch: a slower one that keeps it is kept
    back = [tune.Choice("memmove", "evex", "avx2", "levels", True)]
    floor_driven = [{"defaults": {"memmove": scored("memmove", 1.6, 0.70 + 0.01 * (b % 2))},
                     "tuned": {"memmove": scored("memmove", 1.13, 0.98)}} for b in range(4)]
    assert reproduce.design_confirmed("memmove", back, floor_driven).kept
