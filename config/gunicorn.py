"""gunicorn settings, read from the environment (Procfile: ``gunicorn -c config/gunicorn.py app:app``)."""

import glob
import multiprocessing
import os
import shutil
import tempfile
from typing import Any

# A web worker (not a flask command beside it) keeps the in-process store's snapshot: create_app reads this.
os.environ["AUTHSVC_WEB_WORKER"] = "1"

bind = f"0.0.0.0:{os.environ.get('PORT', '5000')}"

# Without REDIS_URL or REDIS_SENTINELS the store lives inside one process: a second
# worker would not see the first one's sessions and codes, so run one, with threads.
_embedded_store = not (os.environ.get("REDIS_URL") or os.environ.get("REDIS_SENTINELS"))
workers = 1 if _embedded_store else int(os.environ.get("WEB_CONCURRENCY", min(4, multiprocessing.cpu_count() * 2)))
threads = int(os.environ.get("GUNICORN_THREADS", "4" if _embedded_store else "1"))
# gunicorn's sync worker, which answers a connection that waited past AUTHSVC_QUEUE_TIMEOUT with its 503
# right after accept, before parsing it (a seventh of the cost: authsvc/web/shedding_worker.py). With
# threads, gunicorn's threaded worker (gthread), where the WSGI check alone sheds (authsvc/web/overload.py).
worker_class = "authsvc.web.shedding_worker.SheddingWorker" if threads == 1 else "gthread"

# Connections waiting for a worker. Above gunicorn's 2048 (the kernel caps it at net.core.somaxconn):
# under overload the queue must hold what arrives within AUTHSVC_QUEUE_TIMEOUT, so that the excess is
# answered 503 (authsvc.web.overload) rather than dropped unanswered by a full backlog.
backlog = int(os.environ.get("GUNICORN_BACKLOG", "4096"))

timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", "20"))
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", "5"))

# Request line and header limits: an oversized request gets 4xx before Flask sees it.
limit_request_line = int(os.environ.get("AUTHSVC_MAX_REQUEST_LINE", "8190"))
limit_request_fields = int(os.environ.get("AUTHSVC_MAX_HEADERS", "100"))
limit_request_field_size = int(os.environ.get("AUTHSVC_MAX_HEADER_BYTES", "8190"))

# Forwarded headers: one setting, one rule. AUTHSVC_PROXY_HOPS says whose X-Forwarded-* the service
# believes, and the app applies it (werkzeug's ProxyFix, authsvc/web/deployment.py). gunicorn's
# defaults would also believe X-Forwarded-Proto, -Protocol and -Ssl, and map SCRIPT_NAME and PATH_INFO
# headers, from any loopback peer (FORWARDED_ALLOW_IPS), whatever the setting says: with 0 hops anyone
# reaching the port would be https. gunicorn reads none of them, for any number of hops.
forwarded_allow_ips = ""  # no peer
secure_scheme_headers: dict[str, str] = {}
forwarder_headers = ""

# Logs: lines on stdout, through the app's formatter (JSON unless AUTHSVC_LOG_FORMAT=text, as
# ./scripts/run sets). The access log is built from chosen fields only (authsvc.web.logs):
# never the query string (the spec's code exchange carries the code there, and
# bearer_token / api-key may be sent that way too), cookies or the Authorization header.
accesslog = "-" if os.environ.get("AUTHSVC_ACCESS_LOG", "1") != "0" else None
access_log_format = '%(h)s "%(m)s %(U)s" %(s)s %(B)s %(M)sms'
# gunicorn's logger, except that an access record carries only the atoms written (a tenth of inspect's time).
logger_class = "authsvc.web.access_log.AccessLogger"
errorlog = "-"
loglevel = os.environ.get("AUTHSVC_LOG_LEVEL", "info").lower()
_log_format = os.environ.get("AUTHSVC_LOG_FORMAT", "json").lower()  # checked by the app's settings
_formatter = "authsvc.web.logs.TextFormatter" if _log_format == "text" else "authsvc.web.logs.JsonFormatter"
logconfig_dict = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {_log_format: {"()": _formatter}},
    "handlers": {"out": {"class": "logging.StreamHandler", "formatter": _log_format, "stream": "ext://sys.stdout"}},
    "root": {"level": loglevel.upper(), "handlers": ["out"]},
    "loggers": {
        "gunicorn.error": {"level": loglevel.upper(), "handlers": [], "propagate": True},
        "gunicorn.access": {"level": "INFO", "handlers": [], "propagate": True},
    },
}

# gunicorn's control socket sits at one fixed path per user, which several
# instances on one machine (tests, benchmarks) would fight over; not needed.
control_socket_disable = True

# Prometheus: each worker writes its samples to files in this directory and
# /metrics adds them up. It must be set before a worker imports
# prometheus_client, hence here, in the master, before any worker starts.
_own_metrics_dir = not os.environ.get("PROMETHEUS_MULTIPROC_DIR")
if _own_metrics_dir:
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="authsvc-metrics-")


def on_starting(server: Any) -> None:
    # Samples of an earlier run in a configured directory would be added to this one's.
    for path in glob.glob(os.path.join(os.environ["PROMETHEUS_MULTIPROC_DIR"], "*.db")):
        os.remove(path)
    if _embedded_store:
        # Said once a start, here in the master: the workers and the flask commands build the app
        # without a word about it (each would repeat it), and only the service serves requests.
        server.log.warning(
            "REDIS_URL is not set: sessions, codes and limits live in this process (one worker, %d threads)%s",
            threads,
            f"; kept in {os.environ['AUTHSVC_STORE_SNAPSHOT']} across restarts"
            if os.environ.get("AUTHSVC_STORE_SNAPSHOT")
            else "; lost when it stops",
        )

    if not os.environ.get("AUTHSVC_SMTP_URL"):
        # Said once a start, as above. The production rule is config/settings.py's.
        environment = os.environ.get("AUTHSVC_ENV") or (
            "production" if os.environ.get("DATABASE_URL") else "development"
        )
        if environment == "production":
            server.log.warning(
                "AUTHSVC_SMTP_URL is not set: no e-mail is sent, so a forgotten password and address verification "
                "are off (docs/account.md)"
            )
        else:
            server.log.warning("AUTHSVC_SMTP_URL is not set: e-mail is written to instance/mail/ (docs/account.md)")


def post_worker_init(worker: Any) -> None:
    """Each worker sends what the outbox holds (authsvc.outbox.sender), off its requests' threads: e-mail
    on one thread, webhooks on a few of their own.

    The benchmark serves its floors (a bare Flask route, Authlib's twin) with these settings too:
    an app without the outbox has nothing to send.
    """
    from authsvc.outbox.sender import EXTENSION, senders

    if EXTENSION in getattr(worker.wsgi, "extensions", {}):
        for sender in senders(worker.wsgi):
            sender.start()


def child_exit(server: Any, worker: Any) -> None:  # gunicorn's Arbiter and Worker
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server: object) -> None:
    if _own_metrics_dir:
        shutil.rmtree(os.environ["PROMETHEUS_MULTIPROC_DIR"], ignore_errors=True)
