# SPDX-License-Identifier: Apache-2.0
"""The report of a small stored run (tests/data/report/) in a real browser,
headless Chromium: every image in it loads, and nothing on it is wider than
the page, neither the page itself nor a box that hides what runs past its
edge (a table scrolling in its own box).  `make test` installs Chromium
(scripts/deps.sh --test) and sets MEMKIT_REQUIRE_BROWSER=1, so there a
missing browser fails."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from memkit.report.run_report import LOSSES_SHOWN, write_report
from memkit.store.db import Database

STORED_RUN = Path(__file__).resolve().parents[1] / "data" / "report" / "quick-run.db"

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--hide-scrollbars"]

# Appended to a copy of the page: after the load event (which waits for every
# image), each image says whether it decoded, and each element that ends
# past the page's right edge, or holds more than its box shows, says so with
# the start of its text (the outermost such element only).
CHECK = r"""<script>
window.addEventListener('load', function () {
  var out = [];
  for (const img of document.images)
    out.push((img.complete && img.naturalWidth > 0 ? 'OK ' : 'BROKEN ') + img.getAttribute('src'));
  var page = document.documentElement.clientWidth, flagged = [];
  for (const el of document.body.querySelectorAll('*')) {
    if (el.closest('details:not([open]) > :not(summary)') || flagged.some(f => f.contains(el))) continue;
    var name = el.tagName.toLowerCase() + (el.className ? '.' + el.className : '');
    var text = ' "' + el.textContent.trim().slice(0, 60) + '"';
    var right = el.getBoundingClientRect().right;
    if (right > page + 1)
      out.push('WIDE ' + name + ': ends at ' + Math.round(right) + ' px of ' + page + text);
    else if (el.clientWidth && el.scrollWidth > el.clientWidth + 1)
      out.push('HIDES ' + name + ': ' + el.scrollWidth + ' px in ' + el.clientWidth + text);
    else
      continue;
    flagged.push(el);
  }
  var pre = document.createElement('pre');
  pre.id = 'page-check';
  pre.textContent = 'CHECK\n' + out.join('\n') + '\nEND';
  document.body.appendChild(pre);
});
</script>"""


def browser():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("MEMKIT_REQUIRE_BROWSER"):
        pytest.fail("no chromium: `scripts/deps.sh --test` installs it")
    pytest.skip("no chromium (scripts/deps.sh --test installs it)")


def open_page(exe, page: Path, profile: Path, width: int, *extra):
    return subprocess.run([exe, *FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=15000",
                           f"--window-size={width},900", *extra, page.as_uri()],
                          capture_output=True, text=True, timeout=120)


def inspect(exe, index: Path, width: int, mutate=lambda t: t) -> tuple[list[str], list[str]]:
    """The page in Chromium at this width: (each image OK or BROKEN, each
    element too wide)."""
    page = index.with_name(f"check-{width}.html")
    page.write_text(mutate(index.read_text()).replace("</body>", CHECK + "</body>"))
    p = open_page(exe, page, index.parent.parent / f"profile-{width}", width, "--dump-dom")
    m = re.search(r"CHECK\n(.*?)\nEND", p.stdout, re.S)
    assert m, (p.returncode, p.stderr[-2000:])
    lines = [line for line in m[1].splitlines() if line]
    return ([line for line in lines if line.startswith(("OK ", "BROKEN "))],
            [line for line in lines if line.startswith(("WIDE ", "HIDES "))])


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report")
    db = out / "run.db"
    shutil.copy(STORED_RUN, db)
    with Database(db) as d:
        return write_report(d, d.runs()[-1]["id"], out / "rep")


@pytest.mark.parametrize("width", [1280, 800])
def test_every_image_loads_and_nothing_is_wider_than_the_page(report, width):
    exe = browser()
    images, wide = inspect(exe, report, width)
    assert len(images) == len(re.findall(r"<img ", report.read_text())) >= 4
    assert all(line.startswith("OK plots/") for line in images), images
    assert wide == []
    if width == 1280 and os.environ.get("MEMKIT_KEEP_SCREENSHOT"):   # the first screen, to look at
        open_page(exe, report, report.parent.parent / "profile-shot", width,
                  f"--screenshot={os.path.abspath(os.environ['MEMKIT_KEEP_SCREENSHOT'])}")


def test_the_check_sees_a_broken_image_and_what_runs_off_the_page(report):
    exe = browser()
    # A verdict note holding a long unbroken word (the lab's notes quote a
    # measurement's JSON key) wraps; a cell that never wraps in a table
    # scrolling in its own box (the old headline's "fastest here", the page
    # itself not wider) does not fit; nor does a wide element.
    key = "{" + ",".join(f'"key_{i}":{i}' for i in range(40)) + "}"
    cell = "mk_memset (28 of 72), avx512 (19 of 72), glibc (15 of 72), avx2 (9 of 72), sse2 (1 of 72) " * 2
    extra = (f'<ul class="verdicts"><li>note: {key}</li></ul>'
             "<table class='scrolls' style='display: block; overflow-x: auto'>"
             f"<tr><td style='white-space: nowrap'>{cell}</td></tr></table>"
             "<div class='wide' style='width: 3000px'>x</div></body>")
    first = re.search(r"<img src='(plots/[^']+)'", report.read_text())[1]
    images, wide = inspect(exe, report, 1280, lambda t: t.replace(first, "plots/no-such.png", 1)
                           .replace("</body>", extra))
    assert "BROKEN plots/no-such.png" in images
    assert any(line.startswith("HIDES table.scrolls") for line in wide), wide
    assert any(line.startswith("WIDE div.wide") for line in wide), wide
    assert not any("verdicts" in line or line.startswith(("WIDE li", "HIDES li")) for line in wide), wide


def test_the_headline_opens_with_the_trade_then_the_losses_then_the_folded_table(report):
    # No browser needed: the order on the page, which the first screen shows.
    text = report.read_text()
    head = text[text.index("<h2>Headline"):text.index("<h2>Experiments")]
    trade = head.index("<figure class='trade'><img src='plots/headline-trade.png'")
    losses = head.index("<h3>memkit's losses")
    fastest = head.index("<details class='fastest'><summary>The fastest method per operation and range")
    assert trade < losses < fastest
    # The stored run has more losses than the headline shows: the rest folded.
    shown = re.search(r"<ul class='losses'>(.*?)</ul>", head)[1]
    assert shown.count("<li>") == LOSSES_SHOWN and head.index(" more</summary>") < fastest
