"""The docs site: ``mkdocs build --strict`` passes, the pages it builds load in headless
Chromium (Selenium, the system's ``chromium`` and ``chromium-driver``), the navigation works,
the pictures and the benchmark plots load, and the plots and tables come from the benchmark
results files.

The tests skip when mkdocs, graphviz's ``dot``, selenium or chromium are missing, unless
``TAPEGRAD_SITE_TESTS=require`` (set by .ci/run, which installs them): then they fail.
"""
import functools
import html as htmllib
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
RESULTS = os.path.join(ROOT, "benchmarks", "results")
REQUIRED = os.environ.get("TAPEGRAD_SITE_TESTS") == "require"


def need(ok, what):
    if not ok:
        if REQUIRED:
            pytest.fail("%s is missing (TAPEGRAD_SITE_TESTS=require)" % what)
        pytest.skip("%s is not installed" % what)


def need_module(name):
    try:
        __import__(name)
    except ImportError:
        need(False, "the %s package" % name)


def need_build_tools():
    for mod in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python",
                "matplotlib", "graphviz"):
        need_module(mod)
    need(shutil.which("dot") is not None, "graphviz's dot program")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built once with ``mkdocs build --strict`` into a temporary directory."""
    need_build_tools()
    out = tmp_path_factory.mktemp("site")
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                        str(out)], cwd=ROOT, capture_output=True, text=True,
                       env=dict(os.environ, NO_MKDOCS_2_WARNING="1"), timeout=600)
    took = time.perf_counter() - t0
    assert p.returncode == 0, "mkdocs build --strict failed:\n" + p.stdout + p.stderr
    print("mkdocs build --strict: %.1f s" % took)
    return out


def results_docs():
    docs = {}
    for name in sorted(os.listdir(RESULTS)):
        if name.endswith(".json"):
            with open(os.path.join(RESULTS, name)) as fh:
                doc = json.load(fh)
            docs[doc["bench"]] = doc
    return docs


# ----------------------------------------------------------------------------- the build
def test_site_builds_strict_with_every_page(site):
    pages = ["index.html", "api/index.html", "differences/index.html", "autograd/index.html",
             "func/index.html", "testing/index.html", "pictures/index.html",
             "benchmarks/index.html", "design/index.html", "adding_an_op/index.html"]
    pages += ["reference/%s/index.html" % m for m in
              ("tapegrad", "nn_functional", "autograd", "func", "testing", "viz")]
    for p in pages:
        assert (site / p).is_file(), p
    # no generator script or hook is published
    assert not list(site.glob("*.py")) and not (site / "hooks.py").exists()


def test_api_reference_comes_from_the_docstrings(site):
    import tapegrad.viz
    import tapegrad.func
    html = (site / "reference" / "viz" / "index.html").read_text()
    assert 'id="tapegrad.viz.make_dot"' in html and 'id="tapegrad.viz.draw_tape"' in html
    # a sentence of make_dot's docstring, as written there
    first = tapegrad.viz.make_dot.__doc__.split("\n")[0].split(" (")[0].replace("``", "")
    assert first == "The autograd graph of var"
    assert first in re.sub(r"<[^>]+>", "", html)
    html = (site / "reference" / "func" / "index.html").read_text()
    assert 'id="tapegrad.func.make_tape"' in html and 'id="tapegrad.func.vmap"' in html
    assert "Record" in re.sub(r"<[^>]+>", "", html) and tapegrad.func.make_tape.__doc__
    html = (site / "reference" / "nn_functional" / "index.html").read_text()
    assert 'id="tapegrad.nn.functional.' in html


def test_pictures_are_drawn_by_viz_at_build_time(site):
    sys.path.insert(0, DOCS)
    try:
        import gen_pictures
    finally:
        sys.path.remove(DOCS)
    html = (site / "pictures" / "index.html").read_text()
    for name in gen_pictures.PICTURES:
        svg = site / "img" / "pictures" / (name + ".svg")
        assert svg.is_file() and svg.read_bytes().lstrip().startswith(b"<?xml"), name
        assert "../img/pictures/%s.svg" % name in html
    # the code shown above a picture is the code that drew it
    text = htmllib.unescape(re.sub(r"<[^>]+>", "", html))
    assert "return make_dot(loss, params=dict(W1=W1, b1=b1, W2=W2))" in text
    assert gen_pictures.source("recorded_tape").splitlines()[-1] in text
    assert "<!-- picture:" not in html


def test_benchmark_plots_and_tables_come_from_the_results_files(site):
    docs = results_docs()
    assert set(docs) >= {"bench_foundation", "bench_eager", "bench_batch", "bench_hvp",
                         "bench_conv"}
    html = (site / "benchmarks" / "index.html").read_text()
    text = re.sub(r"<[^>]+>", "", html)
    for name, doc in docs.items():
        png = site / "img" / "bench" / (name + ".png")
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert "../img/bench/%s.png" % name in html
        assert doc["commit"] in text
        for row in doc["results"]:
            if row["tool"] != "tapegrad" and row.get("ratio"):
                assert "%.2fx" % row["ratio"] in text, (name, row["case"], row["tool"])
    assert "<!-- bench:" not in html


def test_readme_shows_the_committed_picture_drawn_by_viz():
    need_module("graphviz")
    need(shutil.which("dot") is not None, "graphviz's dot program")
    with open(os.path.join(ROOT, "README.md")) as fh:
        readme = fh.read()
    assert "](docs/img/mlp_graph.svg)" in readme
    assert "mkdocs build --strict" in readme
    sys.path.insert(0, DOCS)
    try:
        import gen_pictures
    finally:
        sys.path.remove(DOCS)
    fresh = gen_pictures.render(["mlp_graph"])["mlp_graph"].decode()
    with open(os.path.join(DOCS, "img", "mlp_graph.svg")) as fh:
        committed = fh.read()

    def labels(svg):
        return sorted(re.findall(r"<text[^>]*>([^<]*)</text>", svg))
    assert labels(committed) == labels(fresh), "regenerate: python docs/gen_pictures.py"
    assert "W1" in labels(committed) and "AccumulateGrad" in labels(committed)


def test_results_writer_and_the_benchmarks_page_hook(tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        import _results
    finally:
        sys.path.remove(os.path.join(ROOT, "benchmarks"))
    res = _results.Results("bench_a", options={"quick": True, "json": "x.json"})
    res.add("mlp", "tapegrad", 2.0e-3, 5, size=32)
    res.add("mlp", "torch", 5.0e-3, 5, size=32, note="eager")
    res.add("mlp", "jax", 1.0e-3, 5, size=32)
    res.add("big", "tapegrad", 1.0, 3, size=None)
    doc = res.write(str(tmp_path / "bench_a.json"))
    assert _results.load(str(tmp_path / "bench_a.json")) == doc
    assert doc["schema"] == "tapegrad-bench/1" and doc["options"] == {"quick": True}
    ratios = {(r["case"], r["tool"]): r["ratio"] for r in doc["results"]}
    assert ratios == {("mlp", "tapegrad"): None, ("mlp", "torch"): 2.5, ("mlp", "jax"): 0.5,
                      ("big", "tapegrad"): None}
    assert doc["machine"]["cores"] == os.cpu_count() and doc["date"].endswith("Z")
    bad = dict(doc, results=[{"case": "mlp", "tool": "torch", "median_s": 1.0}])
    with pytest.raises(ValueError, match="lacks size, repeats, ratio"):
        _results.check(bad)
    with pytest.raises(ValueError, match="not a tapegrad-bench/1 document"):
        _results.check({"rows": []})
    # the site's hook: a marker becomes the plot and the table; a file no marker names is
    # added at the end of the page
    need_build_tools()
    b = dict(doc, bench="bench_b")
    sys.path.insert(0, DOCS)
    try:
        import hooks
    finally:
        sys.path.remove(DOCS)
    saved = dict(hooks._DOCS)
    hooks._DOCS.clear()
    hooks._DOCS.update({"bench_a": doc, "bench_b": b})
    try:
        page = type("P", (), {"file": type("F", (), {"src_uri": "benchmarks.md"})()})()
        md = hooks.on_page_markdown("# B\n\n<!-- bench: bench_a -->\n", page, None, None)
    finally:
        hooks._DOCS.clear()
        hooks._DOCS.update(saved)
    assert "![bench_a](img/bench/bench_a.png)" in md and "![bench_b](img/bench/bench_b.png)" in md
    assert md.index("bench_a.png") < md.index("## Other results") < md.index("bench_b.png")
    assert "| mlp | 32 | 2.00 ms | torch | 5.00 ms | 2.50x |" in md
    assert "| mlp | 32 | 2.00 ms | jax | 1.00 ms | 0.50x |" in md
    assert "| big | - | 1.000 s | - | - | - |" in md


# ----------------------------------------------------------------------------- in a browser
@pytest.fixture(scope="module")
def served(site):
    """The built site on an ephemeral localhost port."""
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d/" % httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()
    thread.join(10)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def browser(served, tmp_path_factory):
    need_module("selenium")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    need(chromium is not None, "chromium")
    need(driver_path is not None, "chromium-driver (chromedriver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                 "--window-size=1280,1000"):
        opts.add_argument(flag)
    opts.add_argument("--user-data-dir=%s" % tmp_path_factory.mktemp("chromium-profile"))
    # the system's driver and browser: Selenium Manager is not asked to download anything
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=opts)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _images_loaded(driver, css):
    """[(src, naturalWidth)] of the images matching css, once the browser has loaded them."""
    from selenium.webdriver.support.ui import WebDriverWait
    script = ("return Array.from(document.querySelectorAll(arguments[0]))"
              ".map(i => [i.getAttribute('src'), i.complete, i.naturalWidth]);")
    WebDriverWait(driver, 30).until(
        lambda d: all(done for _, done, _ in d.execute_script(script, css)))
    return [(src, w) for src, _, w in driver.execute_script(script, css)]


def test_pages_render_and_the_navigation_works(browser, served):
    from selenium.webdriver.common.by import By
    browser.get(served)
    assert browser.title.startswith("tapegrad")
    assert browser.find_element(By.CSS_SELECTOR, "article h1").text == "tapegrad"
    # the README's picture on the start page
    imgs = _images_loaded(browser, "article img")
    assert any(src.endswith("img/mlp_graph.svg") and w > 0 for src, w in imgs), imgs
    # follow the navigation: Pictures, then Benchmarks, then an API page
    for label, path, heading in (("Pictures", "pictures/", "Pictures: the graph and the tape"),
                                 ("Benchmarks", "benchmarks/", "Benchmarks"),
                                 ("tapegrad.viz", "reference/viz/", "tapegrad.viz")):
        link = browser.find_element(By.XPATH, "//nav//a[normalize-space()='%s']" % label)
        browser.execute_script("arguments[0].click();", link)
        from selenium.webdriver.support.ui import WebDriverWait
        WebDriverWait(browser, 30).until(lambda d: d.current_url.endswith(path))
        assert browser.find_element(By.CSS_SELECTOR, "article h1").text == heading
    # every page of the nav loads and has its heading
    browser.get(served)
    hrefs = {a.get_attribute("href") for a in
             browser.find_elements(By.CSS_SELECTOR, "nav.md-nav--primary a.md-nav__link[href]")}
    hrefs = sorted(h for h in hrefs if h.startswith(served) and "#" not in h)
    assert len(hrefs) >= 16, hrefs
    for h in hrefs:
        browser.get(h)
        assert browser.find_element(By.CSS_SELECTOR, "article h1").text.strip(), h
        assert "404" not in browser.title, h


def test_pictures_and_benchmark_plots_load_in_the_browser(browser, served):
    browser.get(served + "pictures/")
    imgs = _images_loaded(browser, "article img")
    sys.path.insert(0, DOCS)
    try:
        import gen_pictures
    finally:
        sys.path.remove(DOCS)
    assert len(imgs) == len(gen_pictures.PICTURES)
    assert all(w > 0 for _, w in imgs), imgs
    browser.get(served + "benchmarks/")
    imgs = _images_loaded(browser, "article img")
    assert len(imgs) == len(results_docs()) >= 5
    assert all(src.startswith("../img/bench/") and w > 0 for src, w in imgs), imgs
