"""``kernelne plot ... -o map.html``: a self-contained interactive page, checked in a real
headless browser (Debian's chromium through selenium): it loads offline with no console
error and draws one mark per node, coloured by label, hovering to the node id and label."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from kernelne.cli.app import main
from kernelne.evaluation.plot import write_map_html

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def _figure_data(page: str) -> list[dict]:
    """The traces plotly's page passes to ``Plotly.newPlot`` (the JSON after the div id)."""
    match = re.search(r'Plotly\.newPlot\(\s*"[^"]+",\s*(\[.*?\]),\s*\{', page, re.S)
    assert match, "no Plotly.newPlot call in the page"
    return json.loads(match.group(1))


@pytest.fixture
def embedding(tmp_path):
    rng = np.random.default_rng(3)
    groups = np.repeat(np.arange(3), 20)
    vectors = (np.eye(3)[groups] * 4 + rng.normal(0, 0.3, (60, 3))).astype(np.float32)
    emb = tmp_path / "emb.npy"
    np.save(emb, vectors)
    labels = tmp_path / "labels.txt"
    names = np.array(["red", "green", "blue"])
    labels.write_text("".join(f"{i} {names[groups[i]]}\n" for i in range(55)))  # 5 unlabelled
    return emb, labels


def test_the_page_is_self_contained_with_ids_and_labels(embedding, tmp_path, capsys):
    emb, labels = embedding
    out = tmp_path / "map.html"
    assert main(["plot", str(emb), "--labels", str(labels), "-o", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    page = out.read_text(encoding="utf-8")
    assert len(page) > 1_000_000  # plotly.js itself is inside
    assert not re.search(r'<script[^>]+src=["\']?https?:', page)  # nothing fetched
    traces = _figure_data(page)
    assert sorted(t["name"] for t in traces) == ["blue", "green", "no label", "red"]
    assert sum(len(t["x"]) for t in traces) == 60
    hover = {row[0]: row[1] for t in traces for row in t["customdata"]}
    assert hover["0"] == "red" and hover["25"] == "green" and hover["57"] == "no label"


def test_bad_html_requests_fail_in_one_line(embedding, tmp_path, capsys):
    emb, labels = embedding
    out = tmp_path / "no" / "map.html"
    assert main(["plot", str(emb), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    other = tmp_path / "other.txt"
    other.write_text("x1 a\nx2 b\n")
    assert main(["plot", str(emb), "--labels", str(other), "-o", str(tmp_path / "m.html")]) == 2
    assert not (tmp_path / "m.html").exists()


def test_without_plotly_the_html_map_names_the_extra(embedding, tmp_path, capsys,
                                                     monkeypatch):
    """plotly is the ``plot`` extra, not a dependency: the page's one error line names the
    output and the install command, and nothing is written."""
    monkeypatch.setitem(sys.modules, "plotly", None)  # import plotly: ImportError
    monkeypatch.setitem(sys.modules, "plotly.graph_objects", None)
    emb, _ = embedding
    out = tmp_path / "map.html"
    assert main(["plot", str(emb), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kernelne: error: {out}: an .html map needs plotly")
    assert "pip install 'kernelne[plot]'" in err and err.count("\n") == 1
    assert not out.exists()
    assert main(["plot", str(emb), "-o", str(tmp_path / "map.png")]) == 0  # images: no extra


@pytest.mark.skipif(not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
                    reason="chromium and chromedriver are not installed (.ci/run installs them)")
def test_the_page_draws_one_mark_per_node_in_a_headless_browser(embedding, tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    emb, labels = embedding
    out = write_map_html(str(emb), str(labels), tmp_path / "map.html")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                 "--disable-gpu", "--host-resolver-rules=MAP * ~NOTFOUND"):  # offline
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.set_page_load_timeout(60)
        driver.get(out.resolve().as_uri())
        driver.set_script_timeout(30)
        counts = driver.execute_async_script("""
            const done = arguments[arguments.length - 1];
            const gd = document.querySelector('.plotly-graph-div');
            const look = () => {
                const marks = gd.querySelectorAll('.scatterlayer .trace .points path');
                if (!gd._fullData || marks.length === 0) { return setTimeout(look, 100); }
                done({marks: marks.length,
                      points: gd._fullData.reduce((s, t) => s + t.x.length, 0),
                      traces: gd._fullData.map(t => t.name),
                      colours: gd._fullData.map(t => t.marker.color)});
            };
            look();
        """)
        log = driver.get_log("browser")
    finally:
        driver.quit()
    assert counts["marks"] == 60 and counts["points"] == 60
    assert sorted(counts["traces"]) == ["blue", "green", "no label", "red"]
    assert len(set(counts["colours"])) == 4  # one colour per label, grey for none
    severe = [entry for entry in log if entry["level"] == "SEVERE"]
    assert severe == []
