"""``python -m bench``: run the benchmark (``python -m bench --help`` for the options)."""

from bench.run import main

raise SystemExit(main())
