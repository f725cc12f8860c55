"""The report of a store holding runs of all three suites, measured in headless Chromium at
1,400 and 800 px: the page never scrolls sideways (a wide table scrolls inside its own box), no
table cell holds raw JSON, no number in a cell has five or more decimals or an exponent, no
token (a number, a name) is wrapped mid-token, no table is drawn empty, long parts are
collapsible, and the page stays a reasonable height.

The report itself has no scripts; the test adds one to a copy of it, which writes what the
browser measured into the DOM that `--dump-dom` prints.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.report.conftest import parse_html
from tests.report.test_browser import _chromium, _run
from tests.report.test_labels_and_numbers import unreadable

from labreplay.report import build_report
from labreplay.store import Store

WIDTHS = (1400, 800)  # a laptop and a narrow window; the height is 800 px
MAX_HEIGHT_PX = 20_000  # the whole page with every collapsible block closed

PROBE = r"""<script>
window.addEventListener('load', () => {
  const root = document.documentElement;
  const tables = [...document.querySelectorAll('table')].map(t => ({
    id: t.id, rows: t.tBodies.length ? t.tBodies[0].rows.length : 0}));
  const cells = [...document.querySelectorAll('td')].map(td => td.textContent.trim());
  const sections = [...document.querySelectorAll('h2')].map(h => h.id);
  // a token (no white space inside) drawn on more than one line was wrapped mid-token
  const broken = [];
  for (const td of document.querySelectorAll('td')) {
    const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.data.matchAll(/\S+/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
        if (tops.size > 1) broken.push(m[0]);
      }
    }
  }
  const out = {scrollWidth: root.scrollWidth, clientWidth: root.clientWidth,
    height: root.scrollHeight, tables: tables, cells: cells, sections: sections, broken: broken,
    details: document.querySelectorAll('details').length};
  const pre = document.createElement('pre');
  pre.id = 'probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""


def test_the_number_rule_itself() -> None:
    assert unreadable("+0.029 (+0.008 to +0.040)") == []
    assert unreadable("+0.07638583580977498") == ["+0.07638583580977498"]
    assert unreadable("12.34567 (1.2 to 6.134e-08)") == ["12.34567", "6.134e-08"]
    assert unreadable("run 3f2a, seed 12345, space 339172e16140") == []  # ids are not scores


def _measure(report: Path, tmp_path: Path, width: int) -> dict[str, Any]:
    probed = tmp_path / "probed.html"
    probed.write_text(
        report.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"),
        encoding="utf-8",
    )
    done = _run(
        _chromium(),
        tmp_path / "profile",
        f"--window-size={width},800",
        "--virtual-time-budget=5000",
        "--dump-dom",
        probed.resolve().as_uri(),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert found, "the probe script did not run"
    measured: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    return measured


@pytest.mark.browser
@pytest.mark.parametrize("width", WIDTHS)
def test_every_suite_section_is_legible_in_chromium(
    tmp_path: Path, three_suite_store: Path, width: int
):
    built = build_report(three_suite_store, tmp_path / "report")
    assert built["suites"] == ["campaign", "conditions", "configsearch"]
    report = Path(built["path"])
    page = _measure(report, tmp_path, width)
    tables = parse_html(report.read_text(encoding="utf-8")).tables
    # readable labels: the agent and only the parameters that tell its runs apart
    assert [r[0] for r in tables["configsearch-leaderboard"]] == ["bo", "exhaustive", "random"]
    assert [r[2] for r in tables["configsearch-leaderboard"]] == ["0-2", "42", "0-2"]  # seeds
    images = {i.get("id", "") for i in parse_html(report.read_text(encoding="utf-8")).images}
    assert "configsearch-best-band_gap" in images  # best-so-far of bo against random, banded
    assert any(i.startswith("configsearch-map-") for i in images)  # heat maps per r
    claims = tables["configsearch-claims"]  # the claims in HTML, not only Markdown
    assert {r[2] for r in claims} == {"robust (n*s >= 30)", "full space"}
    # conditions: score beside the floor with an interval; precedent lift with its interval
    assert all(" to " in r[7] for r in tables["conditions-datasets"])
    assert len(tables["conditions-precedent-lift"]) == 2

    assert {"campaign", "conditions", "configsearch"} <= set(page["sections"])
    for suite in ("campaign", "conditions", "configsearch"):  # the paper beside the store
        assert tables[f"{suite}-paper-published"] and tables[f"{suite}-paper-here"], suite
    # no sideways scrolling of the page: wide tables scroll inside their own box
    assert page["scrollWidth"] <= page["clientWidth"], page["scrollWidth"]
    raw_json = [c for c in page["cells"] if c[:1] in ("{", "[") and c]
    assert not raw_json, raw_json[:3]
    precise = [t for c in page["cells"] for t in unreadable(c)]
    assert not precise, precise[:5]
    assert not page["broken"], page["broken"][:10]  # nothing wraps mid-token
    empty = [t["id"] for t in page["tables"] if t["rows"] == 0]
    assert not empty, empty
    assert page["details"] >= 3  # the long tables are collapsible
    assert page["height"] <= MAX_HEIGHT_PX, page["height"]


def test_each_suite_shows_its_paper_beside_the_store(tmp_path: Path, three_suite_store: Path):
    """Plain HTML (no browser): every suite's "paper beside this store" block quotes the
    paper's figures with their sources, shows this store's figures computed from its runs (the
    same values the suites' boards give), lists why they differ, and holds no raw JSON."""
    from labreplay.report.html import ci_text, num
    from labreplay.suites.campaign.leaderboard import leaderboard
    from labreplay.suites.campaign.papers import PAPER as CAMPAIGN

    built = build_report(three_suite_store, tmp_path / "report")
    text = Path(built["path"]).read_text(encoding="utf-8")
    tables = parse_html(text).tables
    for suite in ("campaign", "conditions", "configsearch"):
        assert f'id="{suite}-paper"' in text
        published = tables[f"{suite}-paper-published"]
        assert published and all(len(r) == 3 and r[2] for r in published)  # each with a source
        assert tables[f"{suite}-paper-here"], suite
        assert text.count(f'<ul id="{suite}-paper-differences"><li>') == 1
        cells = [
            c
            for table in ("published", "here")
            for r in tables[f"{suite}-paper-{table}"]
            for c in r
        ]
        assert not [c for c in cells if c[:1] in ("{", "[")], suite
    assert [r[1] for r in tables["campaign-paper-published"]] == [
        p.value for p in CAMPAIGN.published
    ]
    # this store's figures are the board's, not typed
    with Store(three_suite_store, readonly=True) as store:
        board = leaderboard(store)
        ranker = next(r for r in store.runs(suite="conditions") if r.agent.startswith("ranker"))
        mc_all = store.scores(ranker.run_id)["mc_all_score"]
    here = {r[0]: r for r in tables["campaign-paper-here"]}
    assert board["rows"]  # bayes is ranked
    for row in board["rows"]:
        assert here[row["system"]][3] == num(row["adaptive_auc"])
        assert here[row["system"]][5] == ci_text(row["selection_lift"])
        assert here[row["system"]][6] == ci_text(row["evidence_lift"])  # both controls ran
    conditions = {r[0]: r for r in tables["conditions-paper-here"]}
    assert conditions[ranker.agent][3].endswith(f"/ {mc_all:.3f}")
    configsearch = {r[1]: r for r in tables["configsearch-paper-here"]}
    assert configsearch["-, bo"][3] == "3" and configsearch["-, random"][3] == "3"  # seeds
