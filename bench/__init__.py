"""golem's benchmark against its peers: ``python -m bench`` (see ``bench/run.py``)."""
