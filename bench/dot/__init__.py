"""django-oauth-toolkit as a peer: a Django project that serves its token endpoint and a protected resource.

Runs in a virtual environment of its own that the benchmark makes (``bench/peers.py``,
pinned in ``requirements.txt``), never in the service's. bench/README.md, "Peers".
"""
