"""Issue 24 point 3: a worker loads the rarely used features' libraries only when one is first used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.admin_api import call
from tests.helpers.admin_api import keys as keys  # noqa: F401 - a fixture

ROOT = Path(__file__).resolve().parents[2]
LAZY = ("saml2", "ldap3", "webauthn", "qrcode", "segno", "pydantic")  # segno: our QR codes

PROBE = """
import json, sys
from authsvc import create_app
create_app({"SQLALCHEMY_DATABASE_URI": "sqlite://", "SECRET_KEY": "probe"})
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in %r)))
"""


@pytest.mark.parametrize("web_worker", [True, False], ids=["gunicorn worker", "flask command"])
def test_building_the_app_imports_no_saml_ldap_webauthn_qr_codes_or_pydantic(tmp_path, web_worker):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["AUTHSVC_INSTANCE_DIR"] = str(tmp_path)
    if web_worker:
        env["AUTHSVC_WEB_WORKER"] = "1"  # as config/gunicorn.py sets it
    else:
        env.pop("AUTHSVC_WEB_WORKER", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE % (LAZY,)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_the_admin_schemas_still_answer_once_loaded(client, keys):
    """The first admin write loads pydantic and reads its body as before: every problem at once."""
    response = call(client, "post", "/users", keys.admin_key, json={"email": 5, "admin": "yes"})
    assert response.status_code == 422, response.get_json()
    assert set(response.get_json()["fields"]) >= {"email", "admin"}
