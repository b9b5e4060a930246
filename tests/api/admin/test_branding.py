"""A domain's branding through the admin API and the command line: who may change it, the rules of each
field, the logo's checks (by content, size, pixels) and its re-encoding, the audit of every change."""

from __future__ import annotations

import io
import json

import pytest
from PIL import Image
from sqlalchemy import select

from authsvc.core import branding
from authsvc.core.models import AuditRecord, Domain, DomainBranding
from tests.helpers import HOST, OTHER_HOST, headers
from tests.helpers.admin_api import API, call
from tests.helpers.images import PNG_HEADER_ON_TEXT, SVG, image, png_claiming

BRANDING = "/domains/1/branding"


def put_logo(client, key, data: bytes, content_type: str = "image/png"):
    return client.put(
        f"{API}{BRANDING}/logo", data=data, headers=headers(HOST, **{"X-API-Key": key, "Content-Type": content_type})
    )


@pytest.mark.parametrize(
    "first,second,ratio",
    [
        ("#000000", "#ffffff", 21.0),
        ("#ffffff", "#ffffff", 1.0),
        ("#767676", "#ffffff", 4.54),
        ("#777777", "#ffffff", 4.48),
    ],
)
def test_contrast_is_wcag_21s_ratio_of_relative_luminances(first, second, ratio):
    assert round(branding.contrast_ratio(first, second), 2) == ratio


@pytest.mark.parametrize(
    "primary,text", [("#1a4fd6", "#ffffff"), ("#767676", "#ffffff"), ("#777777", "#000000"), ("#ffd400", "#000000")]
)
def test_a_primary_colour_white_text_would_fail_aa_on_gets_black_text(primary, text):
    assert branding.text_color_on(primary) == text
    assert branding.contrast_ratio(text, primary) >= branding.AA_CONTRAST


def test_an_unbranded_domain_answers_the_default_look(client, keys):
    answer = call(client, "get", BRANDING, keys.support_key)
    assert answer.status_code == 200
    assert answer.json["domain"] == "1" and answer.json["primary_color"] is None and answer.json["logo"] is None


def test_an_admin_sets_the_branding_and_the_change_is_audited(app, client, keys):
    body = {
        "display_name": "Acme Corp",
        "primary_color": "#FFD400",
        "background_color": "#101820",
        "support_url": "https://help.acme.example/",
        "support_email": "help@acme.example",
        "privacy_url": "https://acme.example/privacy",
        "terms_url": "http://localhost:8080/terms",
        "default_locale": "de-CH",
    }
    answer = call(client, "put", BRANDING, keys.admin_key, json=body)
    assert answer.status_code == 200, answer.json
    assert answer.json | {"updated_at": None} == body | {
        "domain": "1",
        "primary_color": "#ffd400",
        "primary_text_color": "#000000",
        "logo": None,
        "updated_at": None,
    }
    assert call(client, "get", BRANDING, keys.support_key).json == answer.json
    with app.app_context():
        [record] = app_records(app, "domain.branding_updated")
        assert (
            record.details["after"]["display_name"] == "Acme Corp" and record.details["before"]["display_name"] is None
        )


def test_only_the_fields_given_change_and_null_returns_one_to_the_default(client, keys):
    call(client, "put", BRANDING, keys.admin_key, json={"display_name": "Acme", "primary_color": "#123456"})
    answer = call(client, "put", BRANDING, keys.admin_key, json={"display_name": None})
    assert answer.json["display_name"] is None and answer.json["primary_color"] == "#123456"


def test_support_reads_but_may_not_change_and_another_domains_admin_sees_nothing(client, keys, world):
    assert call(client, "put", BRANDING, keys.support_key, json={"display_name": "X"}).status_code == 403
    assert put_logo(client, keys.support_key, image()).status_code == 403
    stranger = world.user(keys.other_domain, "admin@other.example", admin=True)
    other_key = world.api_key(stranger, scopes="public admin", permission="admin")
    assert call(client, "get", BRANDING, other_key, host=OTHER_HOST).status_code == 404
    # A system admin reaches every domain.
    assert (
        call(client, "put", BRANDING, keys.system_key, json={"display_name": "X"}, host=OTHER_HOST).status_code == 200
    )


@pytest.mark.parametrize(
    "field,value,reason",
    [
        ("primary_color", "red", "#RRGGBB"),
        ("primary_color", "#12345", "#RRGGBB"),
        ("background_color", "#12345g", "#RRGGBB"),
        ("background_color", "#1;}a{b", "#RRGGBB"),
        ("background_color", "#123456;}body{x:y", "at most 7"),
        ("support_url", "http://help.example.com/", "https"),
        ("privacy_url", "javascript:alert(1)", "https"),
        ("terms_url", "data:text/html,<b>x</b>", "https"),
        ("terms_url", "https://user:pw@acme.example/", "credentials"),
        ("support_url", "//acme.example/help", "https"),
        ("support_email", "not an address", "e-mail"),
        ("default_locale", "english please", "language tag"),
        ("display_name", "", "empty"),
        ("display_name", "x" * 201, "200"),
        ("primary_color", 123456, "string"),
    ],
)
def test_a_refused_value_names_its_field_and_the_reason(client, keys, field, value, reason):
    answer = call(client, "put", BRANDING, keys.admin_key, json={field: value})
    assert answer.status_code == 422, answer.json
    assert reason in answer.json["fields"][field], answer.json
    assert call(client, "get", BRANDING, keys.admin_key).json[field] is None


def test_a_logo_is_reencoded_stored_with_its_digest_and_served_from_our_host(app, client, keys):
    upload = image("PNG") + b"<script>trailing data</script>"
    answer = put_logo(client, keys.admin_key, upload, content_type="application/octet-stream")
    assert answer.status_code == 200, answer.json
    logo = answer.json["logo"]
    assert logo["content_type"] == "image/png" and len(logo["digest"]) == 64
    served = client.get(f"/auth/branding/logo?v={logo['digest']}", headers=headers())
    assert served.status_code == 200 and served.mimetype == "image/png"
    assert b"trailing data" not in served.data
    assert Image.open(io.BytesIO(served.data)).size == (64, 32)


@pytest.mark.parametrize("kind,content_type", [("JPEG", "image/jpeg"), ("WEBP", "image/webp")])
def test_jpeg_and_webp_logos_keep_their_kind(client, keys, kind, content_type):
    answer = put_logo(client, keys.admin_key, image(kind), content_type="image/png")
    assert answer.status_code == 200, answer.json
    assert answer.json["logo"]["content_type"] == content_type


@pytest.mark.parametrize(
    "upload,reason",
    [
        (PNG_HEADER_ON_TEXT, "PNG, JPEG or WebP"),
        (SVG, "SVG"),
        (image("GIF"), "PNG, JPEG or WebP"),
        (image("PNG")[:60], "PNG, JPEG or WebP"),
        (image("PNG", size=(1025, 10)), "1025x10 pixels"),
        (image("PNG", size=(10, 2000)), "at most 1024"),
        (png_claiming(60000, 60000), "far more pixels"),
        (png_claiming(20000, 10000), "1024"),
        (b"", "empty"),
        (b"\x00" * (256 * 1024 + 1), "256 KiB"),
    ],
    ids=["png-header-on-text", "svg", "gif", "truncated", "too-wide", "too-tall", "bomb", "big-claim", "empty", "big"],
)
def test_a_logo_that_is_not_a_small_png_jpeg_or_webp_is_refused_with_the_reason(client, keys, upload, reason):
    answer = put_logo(client, keys.admin_key, upload)
    assert answer.status_code == 422, answer.data
    assert reason in answer.json["fields"]["logo"]
    assert call(client, "get", BRANDING, keys.admin_key).json["logo"] is None


def test_a_body_past_the_logos_limit_is_refused_unread(client, keys):
    assert put_logo(client, keys.admin_key, b"\x89PNG" + b"\x00" * 400_000).status_code == 413


def test_the_logo_is_removed_alone_and_a_reset_removes_everything(app, client, keys):
    call(client, "put", BRANDING, keys.admin_key, json={"display_name": "Acme"})
    digest = put_logo(client, keys.admin_key, image()).json["logo"]["digest"]
    removed = call(client, "delete", BRANDING + "/logo", keys.admin_key)
    assert removed.json["logo"] is None and removed.json["display_name"] == "Acme"
    assert client.get(f"/auth/branding/logo?v={digest}", headers=headers()).status_code == 404
    reset = call(client, "delete", BRANDING, keys.admin_key)
    assert reset.status_code == 200 and reset.json["display_name"] is None
    with app.app_context():
        from authsvc.core.database import db

        assert db.session.scalars(select(DomainBranding)).all() == []
        assert db.session.get(Domain, 1).branding_version is None
        assert len(app_records(app, "domain.branding_updated")) == 4


def test_a_branded_domain_can_be_deleted(client, keys):
    call(client, "put", BRANDING, keys.admin_key, json={"display_name": "Acme"})
    put_logo(client, keys.admin_key, image())
    answer = call(client, "delete", "/domains/1?force=true", keys.system_key, host=OTHER_HOST)
    assert answer.status_code == 200, answer.json


def test_the_command_sets_the_branding_and_prints_it(app, runner, setup, tmp_path):
    logo = tmp_path / "logo.webp"
    logo.write_bytes(image("WEBP"))
    result = runner.invoke(
        args=["domains", "brand", "--domain", HOST, "--display-name", "Acme", "--primary-color", "#0B5FFF",
              "--support-url", "https://help.acme.example/", "--logo", str(logo)]
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert shown["display_name"] == "Acme" and shown["primary_color"] == "#0b5fff"
    assert shown["logo"]["content_type"] == "image/webp"
    reset = runner.invoke(args=["domains", "brand", "--domain", HOST, "--reset"])
    assert reset.exit_code == 0 and json.loads(reset.output)["display_name"] is None
    with app.app_context():
        assert len(app_records(app, "domain.branding_updated")) == 3


@pytest.mark.parametrize(
    "option,value,message",
    [
        ("--primary-color", "blue", "--primary-color: 'blue' is not a colour"),
        ("--privacy-url", "javascript:alert(1)", "--privacy-url: 'javascript:alert(1)' must be an absolute https URL"),
        ("--terms-url", "http://acme.example/terms", "--terms-url: 'http://acme.example/terms' must use https"),
    ],
)
def test_the_command_names_the_refused_option_and_why(runner, setup, option, value, message):
    result = runner.invoke(args=["domains", "brand", "--domain", HOST, option, value])
    assert result.exit_code != 0
    assert message in result.output


def test_the_command_refuses_an_svg_logo_naming_the_option(runner, setup, tmp_path):
    svg = tmp_path / "logo.svg"
    svg.write_bytes(SVG)
    result = runner.invoke(args=["domains", "brand", "--domain", HOST, "--logo", str(svg)])
    assert result.exit_code != 0 and "--logo: the logo must be a PNG, JPEG or WebP image" in result.output


def app_records(app, event):
    from authsvc.core.database import db

    return db.session.scalars(select(AuditRecord).where(AuditRecord.event == event)).all()
