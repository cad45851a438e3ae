"""``python -m bench``: run the benchmark (``python -m bench --help`` for the options),
then the long-conversation prompt-cache benchmark (``bench/cache.py``); with ``--write``
both record their sections in the report's JSON sibling and render it (``bench/report.py``)."""

import sys

from bench import cache
from bench.run import main

status = main()
written = sys.argv[sys.argv.index("--write") + 1] if "--write" in sys.argv[:-1] else None
cache.main(["--write", written] if written else [])
raise SystemExit(status)
