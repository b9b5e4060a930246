"""The peer's WSGI application, for ``gunicorn -c bench/dot/gunicorn.py bench.dot.wsgi``."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.dot.settings")
application = get_wsgi_application()
