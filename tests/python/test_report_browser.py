# SPDX-License-Identifier: Apache-2.0
"""The report in a real browser (headless Chromium): the page loads and
every image in it loads.  `make test` installs Chromium (scripts/deps.sh
--test) and sets MEMKIT_REQUIRE_BROWSER=1, so there a missing browser fails."""

import os
import re
import shutil
import subprocess

import pytest

from memkit.report.run_report import write_report
from memkit.store.db import Database
from test_report import store_suite

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--hide-scrollbars"]

# Appended to a copy of the page: after the load event (which waits for every
# image), each image says whether it decoded.
CHECK = """<script>
window.addEventListener('load', function () {
  var out = [];
  for (const img of document.images)
    out.push((img.complete && img.naturalWidth > 0 ? 'OK ' : 'BROKEN ') + img.getAttribute('src'));
  var pre = document.createElement('pre');
  pre.id = 'image-check';
  pre.textContent = 'IMAGES ' + document.images.length + '\\n' + out.join('\\n') + '\\nEND';
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


def open_page(exe, page, profile, *extra):
    p = subprocess.run([exe, *FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=15000", *extra,
                        page.as_uri()], capture_output=True, text=True, timeout=120)
    return p


def check_images(exe, index, tmp_path, mutate=lambda t: t):
    page = index.with_name("check.html")
    text = mutate(index.read_text())
    page.write_text(text.replace("</body>", CHECK + "</body>"))
    p = open_page(exe, page, tmp_path / "profile", "--dump-dom")
    m = re.search(r"IMAGES (\d+)\n(.*?)\nEND", p.stdout, re.S)
    assert m, (p.returncode, p.stderr[-2000:])
    return int(m[1]), m[2].splitlines()


def suite_report(tmp_path):
    """The report of a stored suite whose second run has memkit 1.5x slower."""
    db = tmp_path / "m.db"
    store_suite(db)
    run = store_suite(db, slow_memkit=1.5)
    with Database(db) as d:
        return write_report(d, run, tmp_path / "rep")


def test_report_loads_in_chromium(tmp_path):
    exe = browser()
    index = suite_report(tmp_path)
    expected = len(re.findall(r"<img ", index.read_text()))
    count, lines = check_images(exe, index, tmp_path)
    assert count == expected >= 9
    assert all(l.startswith("OK plots/") for l in lines), lines
    # The check can fail: an image whose file is missing is reported broken.
    count, lines = check_images(exe, index, tmp_path, lambda t: t.replace("plots/faults-", "plots/no-such-"))
    assert any(l.startswith("BROKEN plots/no-such-") for l in lines)
    # A screenshot of the top of the page: the headline is on the first screen.
    shot = tmp_path / "rep" / "top.png"
    open_page(exe, index, tmp_path / "profile2", f"--screenshot={shot}", "--window-size=1200,1100")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("MEMKIT_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["MEMKIT_KEEP_SCREENSHOT"])


WIDTH = """<script>
window.addEventListener('load', function () {
  var pre = document.createElement('pre');
  pre.id = 'width-check';
  pre.textContent = 'WIDTH ' + document.documentElement.scrollWidth + ' ' + window.innerWidth + ' END';
  document.body.appendChild(pre);
});
</script>"""


@pytest.mark.parametrize("width", [1280, 800])
def test_report_never_scrolls_sideways(tmp_path, width):
    exe = browser()
    index = suite_report(tmp_path)
    page = index.with_name("width.html")

    def measure(text):
        page.write_text(text.replace("</body>", WIDTH + "</body>"))
        p = open_page(exe, page, tmp_path / "profile", "--dump-dom", f"--window-size={width},900")
        m = re.search(r"WIDTH (\d+) (\d+) END", p.stdout)
        assert m, (p.returncode, p.stderr[-2000:])
        return int(m[1]), int(m[2])
    content, window = measure(index.read_text())
    assert content <= window, f"the page is {content} px wide in a {window} px window"
    # A verdict note holding a long unbroken word (the lab's notes quote a
    # measurement's JSON key) wraps instead of widening the page.
    key = "{" + ",".join(f'"key_{i}":{i}' for i in range(40)) + "}"
    content, window = measure(index.read_text().replace(
        "</body>", f'<ul class="verdicts"><li>note: {key}</li></ul></body>'))
    assert content <= window, f"a long verdict note makes the page {content} px wide in a {window} px window"
    # The check can fail: a wide element makes the page scroll.
    content, window = measure(index.read_text().replace("</body>", "<div style='width:3000px'>x</div></body>"))
    assert content > window
