"""The console's branding page: an admin sets the fields and uploads the logo in one CSRF-protected form,
a refused value is shown on its field with nothing saved, support sees no form, and a reset asks first."""

from __future__ import annotations

import io

from sqlalchemy import select

from authsvc.core.models import DomainBranding
from tests.helpers import HOST, headers
from tests.helpers.console import CONSOLE, as_admin, audit, get, submit, text
from tests.helpers.images import SVG, image

FIELDS = {
    "display_name": "Acme Corp",
    "primary_color": "#0B3D91",
    "background_color": "",
    "support_url": "https://help.acme.example/",
    "support_email": "",
    "privacy_url": "",
    "terms_url": "",
    "default_locale": "en",
}


def path(setup) -> str:
    return f"/domains/{setup.domain.id}/branding"


def test_an_admin_saves_the_branding_and_a_logo_and_the_sign_in_page_shows_them(client, setup, people, world):
    as_admin(client)
    page = get(client, path(setup))
    assert page.status_code == 200 and 'enctype="multipart/form-data"' in text(page)
    saved = submit(client, path(setup), {**FIELDS, "logo": (io.BytesIO(image("JPEG")), "logo.jpg")}, page=page)
    assert saved.status_code == 303, text(saved)
    shown = text(get(client, path(setup)))
    assert 'value="#0b3d91"' in shown and "Current logo: image/jpeg" in shown
    login = client.get("/auth/login", headers=headers()).get_data(as_text=True)
    assert "Acme Corp" in login and "/auth/branding/logo?v=" in login
    assert len(audit(world, "domain.branding_updated")) == 2  # the fields, then the logo


def test_a_refused_logo_is_shown_on_its_field_and_nothing_is_saved(client, setup, people, world):
    as_admin(client)
    answer = submit(client, path(setup), {**FIELDS, "logo": (io.BytesIO(SVG), "logo.svg")})
    assert answer.status_code == 422
    assert "the logo must be a PNG, JPEG or WebP image" in text(answer)
    assert world.query(select(DomainBranding)) == []


def test_a_refused_colour_names_the_field_and_the_reason(client, setup, people):
    as_admin(client)
    answer = submit(client, path(setup), {**FIELDS, "primary_color": "navy"})
    assert answer.status_code == 422 and "is not a colour: write it as #RRGGBB" in text(answer)


def test_a_post_without_the_forms_csrf_token_changes_nothing(client, setup, people, world):
    as_admin(client)
    answer = client.post(CONSOLE + path(setup), data=FIELDS, headers=headers(HOST))
    assert answer.status_code == 400
    assert world.query(select(DomainBranding)) == []


def test_support_sees_the_branding_without_a_form_to_save(client, setup, people):
    as_admin(client, "support@example.com")
    page = text(get(client, path(setup)))
    assert "Save branding" not in page
    assert submit(client, path(setup), FIELDS).status_code == 403


def test_a_reset_asks_first_and_then_restores_the_default_look(client, setup, people, world):
    as_admin(client)
    submit(client, path(setup), FIELDS)
    assert "Reset the branding?" in text(get(client, path(setup) + "/reset"))
    assert submit(client, path(setup) + "/reset").status_code == 303
    assert world.query(select(DomainBranding)) == []
    assert "Acme Corp" not in client.get("/auth/login", headers=headers()).get_data(as_text=True)
