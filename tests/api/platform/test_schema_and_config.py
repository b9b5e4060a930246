"""The migrations build the models' schema; settings come from the environment."""

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from authsvc.core.database import db
from config import settings
from tests.helpers import in_one_pass
from tests.helpers.python_run import run_python


def test_migrations_build_exactly_the_models_schema(app):
    with app.app_context(), db.engine.connect() as conn:
        differences = compare_metadata(MigrationContext.configure(conn), db.metadata)
    assert differences == []


@pytest.mark.parametrize(
    "given,expected",
    [
        ("postgres://u:p@db.example:5432/auth", "postgresql+psycopg://u:p@db.example:5432/auth"),
        ("postgresql://u@db/auth", "postgresql+psycopg://u@db/auth"),
        ("sqlite:////tmp/x.db", "sqlite:////tmp/x.db"),
    ],
)
def test_database_url_accepts_herokus_postgres_scheme(given, expected):
    assert settings.database_url(given) == expected


def test_no_database_url_means_sqlite_under_instance():
    assert settings.database_url(None).startswith("sqlite:///")
    assert settings.database_url(None).endswith("authsvc.sqlite3")


@in_one_pass("sqlite")  # a fresh interpreter with its own settings: the same on either pass
def test_production_refuses_to_start_without_secret_key():
    result = run_python("import app", DATABASE_URL="postgres://nobody@127.0.0.1:1/none")
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr


@in_one_pass("sqlite")  # a fresh interpreter with its own settings: the same on either pass
def test_settings_are_read_from_the_environment():
    code = (
        "from authsvc import create_app; a = create_app(); c = a.config; "
        "print(c['SQLALCHEMY_DATABASE_URI'], c['AUTHSVC_ACCESS_TOKEN_TTL'], c['AUTHSVC_DEFAULT_DOMAIN'], "
        "c['AUTHSVC_COOKIE_SECURE'], c['SECRET_KEY'])"
    )
    result = run_python(
        code,
        DATABASE_URL="postgres://nobody@127.0.0.1:1/none",
        SECRET_KEY="from-env",
        AUTHSVC_ACCESS_TOKEN_TTL="900",
        AUTHSVC_DEFAULT_DOMAIN="Auth.Example.com",
        AUTHSVC_COOKIE_SECURE="false",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "postgresql+psycopg://nobody@127.0.0.1:1/none",
        "900",
        "auth.example.com",
        "False",
        "from-env",
    ]


@in_one_pass("sqlite")  # a fresh interpreter with its own settings: the same on either pass
def test_a_bad_setting_stops_the_start_with_a_clear_message():
    result = run_python("import app", AUTHSVC_ACCESS_TOKEN_TTL="two hours")
    assert result.returncode != 0
    assert "AUTHSVC_ACCESS_TOKEN_TTL must be an integer" in result.stderr


@in_one_pass("sqlite")  # a fresh interpreter with its own settings: the same on either pass
@pytest.mark.parametrize("value", ["0", "-1", "30", "soon"])
def test_an_outbound_deadline_that_is_not_below_the_worker_timeout_stops_the_start(value):
    result = run_python("import app", AUTHSVC_OUTBOUND_DEADLINE=value)
    assert result.returncode != 0
    assert "AUTHSVC_OUTBOUND_DEADLINE must be" in result.stderr
