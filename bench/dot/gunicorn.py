"""The peer's gunicorn settings: the service's (config/gunicorn.py) without its own logger classes.

config/gunicorn.py names authsvc's access logger and JSON formatter, which this
virtual environment does not have; the rest is the same: sync workers, one
thread, ``WEB_CONCURRENCY`` workers, the same keep-alive, an access line a request.
"""

import os

bind = f"127.0.0.1:{os.environ.get('PORT', '5000')}"
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
threads = 1
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", "5"))
timeout = 30
accesslog = "-"
access_log_format = '%(h)s "%(m)s %(U)s" %(s)s %(B)s %(M)sms'
errorlog = "-"
control_socket_disable = True
