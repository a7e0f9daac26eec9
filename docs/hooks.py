"""MkDocs hooks (mkdocs.yml ``hooks:``): generated pictures and plots, expanded markers.

* ``on_files``: adds the pictures of ``docs/gen_pictures.py`` (drawn by ``tapegrad.viz`` with
  the ``dot`` program) as ``img/pictures/<name>.svg`` and the plots of ``docs/gen_plots.py``
  (from benchmarks/results/*.json) as ``img/bench/<bench>.png``. They live in memory and in
  the built site only: nothing is written into docs/.
* ``on_page_markdown``: ``<!-- picture: NAME -->`` becomes the code that drew picture NAME
  and the picture; ``<!-- bench: NAME -->`` the plot and table of benchmark run NAME (on the
  page with such markers, results files that none names are added at its end).
"""
import os
import posixpath
import re
import shutil
import sys

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import gen_pictures  # noqa: E402
import gen_plots  # noqa: E402

PICTURE = re.compile(r"<!-- picture: (\w+) -->")
BENCH = re.compile(r"<!-- bench: (\w+) -->")
_DOCS = {}


def on_files(files, config):
    if shutil.which("dot") is None:
        raise PluginError("the docs build draws its pictures with graphviz's dot program, "
                          "which is not installed (apt-get install graphviz)")
    try:
        pictures = gen_pictures.render()
    except ImportError as e:
        raise PluginError("the docs build needs %s (pip install \".[docs]\")" % e) from None
    for name, svg in pictures.items():
        files.append(File.generated(config, "img/pictures/%s.svg" % name, content=svg))
    _DOCS.clear()
    _DOCS.update(gen_plots.load_all(gen_plots.RESULTS))
    for name, doc in _DOCS.items():
        files.append(File.generated(config, "img/bench/%s.png" % name,
                                    content=gen_plots.plot(doc)))
    return files


def _rel(page, target):
    """A link from ``page`` to the docs file ``target`` (both relative to docs/)."""
    return posixpath.relpath(target, posixpath.dirname(page.file.src_uri) or ".")


def on_page_markdown(markdown, page, config, files):
    def picture(m):
        name = m.group(1)
        if name not in gen_pictures.PICTURES:
            raise PluginError("%s: no picture %r in docs/gen_pictures.py" % (page.file.src_uri, name))
        return "```python\n%s```\n\n![%s](%s)\n" % (
            gen_pictures.source(name), name.replace("_", " "),
            _rel(page, "img/pictures/%s.svg" % name))

    def bench_md(name):
        return "![%s](%s)\n\n%s" % (name, _rel(page, "img/bench/%s.png" % name),
                                     gen_plots.table(_DOCS[name]))

    def bench(m):
        name = m.group(1)
        if name not in _DOCS:
            raise PluginError("%s: no benchmarks/results/%s.json (run benchmarks/%s.py)"
                              % (page.file.src_uri, name, name))
        return bench_md(name)
    markdown = PICTURE.sub(picture, markdown)
    named = set(BENCH.findall(markdown))
    if named:
        # results files that no marker places are shown at the end of the page
        rest = [n for n in _DOCS if n not in named]
        if rest:
            markdown += "\n## Other results\n\n" + "\n".join(
                "### `%s`\n\n<!-- bench: %s -->\n" % (n, n) for n in rest)
    return BENCH.sub(bench, markdown)
