"""The OpenAPI document for the tests: as the app serves it, and as the file read at import time,
with its operations (for parametrising).

Used by tests/api/fuzz/test_openapi.py, tests/api/fuzz/test_openapi_schemathesis.py and
tests/api/fuzz/test_openapi_answers.py.
"""

import json

import pytest

from authsvc.openapi import OPENAPI_DOCUMENT
from tests.helpers import headers


@pytest.fixture
def document(client, setup):
    """The document as the app serves it."""
    response = client.get("/api/engine/v2/openapi.json", headers=headers())
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    return response.get_json()


# The file, read at import time: the operations parametrise tests.
DOCUMENT = json.loads(OPENAPI_DOCUMENT.read_text())
OPERATIONS = [(path, method) for path, item in DOCUMENT["paths"].items() for method in item]
ADMIN_OPERATIONS = [(path, method) for path, method in OPERATIONS if "admin" in DOCUMENT["paths"][path][method]["tags"]]
