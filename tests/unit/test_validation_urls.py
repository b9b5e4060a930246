"""The URL rules of authsvc.core.validation as pure functions: what the registration, admin API, SSO and
logout tests reach through HTTP, here without a server (no database, no name lookups)."""

from __future__ import annotations

import pytest

from authsvc.core import validation
from authsvc.core.validation import Invalid

# 127.0.0.1 in every form the system resolver reads, and other inside addresses
# (the list of tests/api/admin/test_client_metadata_rules.py, plus a subdomain of localhost).
INSIDE = [
    "https://127.0.0.1/x",
    "https://2130706433/x",
    "https://0x7f000001/x",
    "https://0177.0.0.1/x",
    "https://127.1/x",
    "https://0x7f.0.0.1/x",
    "https://[::1]/x",
    "https://[::ffff:127.0.0.1]/x",
    "https://10.0.0.1/x",
    "https://169.254.169.254/latest",
    "https://167772161/x",
    "https://localhost/x",
    "https://app.localhost/x",
]
USERINFO = ["https://a.example@evil.example/cb", "https://user:pass@app.example.com/cb", "https://@app.example.com/cb"]


@pytest.mark.parametrize(
    "uri",
    [
        "https://app.example.com/callback",
        "https://app.example.com:8443/cb?x=1",
        "http://localhost:8080/callback",
        "http://127.0.0.1:53124/cb",
        "http://[::1]/cb",
        "com.example.app:/oauth2redirect",
    ],
)
def test_a_redirect_uri_that_is_absolute_without_fragment_is_kept_as_given(uri):
    assert validation.redirect_uri(uri) == uri


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("https://app.example.com:99999/cb", "is not a valid URI"),
        ("https://app.example.com:port/cb", "is not a valid URI"),
        ("https://[::1/cb", "is not a valid URI"),
        ("https://app.example.com/c b", "has characters a URI cannot hold"),
        ("https://app.example.com/cb\n", "has characters a URI cannot hold"),
        ("https://app.example.com/caf\u00e9", "has characters a URI cannot hold"),
        ('https://app.example.com/"cb', "has characters a URI cannot hold"),
        ("https://app.example.com/<cb>", "has characters a URI cannot hold"),
        ("https://app.example.com\\@evil.example/cb", "has characters a URI cannot hold"),
        ("/callback", "must be an absolute URI without a fragment"),
        ("https://app.example.com/cb#top", "must be an absolute URI without a fragment"),
        ("https://app.example.com/cb#", "must be an absolute URI without a fragment"),
        ("javascript:alert(1)", "uses a scheme that cannot be a redirect URI"),
        ("JavaScript:alert(1)", "uses a scheme that cannot be a redirect URI"),
        ("data:text/html,hi", "uses a scheme that cannot be a redirect URI"),
        ("file:///etc/passwd", "uses a scheme that cannot be a redirect URI"),
        ("https:///cb", "has no host"),
        ("http://app.example.com/cb", "plain http is allowed only for localhost and loopback addresses"),
        ("http://10.0.0.1/cb", "plain http is allowed only for localhost and loopback addresses"),
    ],
)
def test_a_redirect_uri_is_refused_with_the_reason(uri, message):
    with pytest.raises(Invalid, match=message):
        validation.redirect_uri(uri)


@pytest.mark.parametrize("uri", USERINFO)
def test_a_redirect_uri_with_userinfo_is_refused(uri):
    with pytest.raises(Invalid, match="must not hold a user name or password before its host"):
        validation.redirect_uri(uri)


@pytest.mark.parametrize("uri", ["https://rp.example.com/logout", "http://localhost:9000/bc", "http://127.0.0.1/bc"])
def test_a_backchannel_logout_uri_is_https_or_loopback_http(uri):
    assert validation.backchannel_logout_uri(uri) == uri


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("https://rp.example.com:0x50/bc", "is not a valid URL"),
        ("https://rp.example.com/b c", "has characters a URL cannot hold"),
        ("https://rp.example.com/\u00e9", "has characters a URL cannot hold"),
        ("com.example.app:/bc", "must be an absolute https URL without a fragment"),
        ("https://rp.example.com/bc#x", "must be an absolute https URL without a fragment"),
        ("/bc", "must be an absolute https URL without a fragment"),
        ("http://rp.example.com/bc", "plain http is allowed only for localhost and loopback addresses"),
    ],
)
def test_a_backchannel_logout_uri_is_refused_with_the_reason(uri, message):
    with pytest.raises(Invalid, match=message):
        validation.backchannel_logout_uri(uri)


def test_a_quote_is_refused_in_a_redirect_uri_but_kept_in_a_backchannel_logout_uri():
    assert validation.backchannel_logout_uri('https://rp.example.com/"bc') == 'https://rp.example.com/"bc'
    with pytest.raises(Invalid):
        validation.redirect_uri('https://rp.example.com/"bc')


@pytest.mark.parametrize("url", [None, "https://idp.example.com/.well-known", "http://127.0.0.1:5555/token"])
def test_a_provider_url_is_absolute_https_or_loopback_http(url):
    assert validation.provider_url(url, "issuer") == url


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("https://idp.example.com:99999/", "issuer 'https://idp.example.com:99999/' is not a valid URL"),
        ("ftp://idp.example.com/", "issuer 'ftp://idp.example.com/' must be an absolute http\\(s\\) URL"),
        ("https:///token", "must be an absolute http\\(s\\) URL"),
        ("https://idp.example.com/#x", "must be an absolute http\\(s\\) URL"),
        ("idp.example.com", "must be an absolute http\\(s\\) URL"),
        (
            "http://idp.example.com/",
            "issuer 'http://idp.example.com/': plain http is allowed only for loopback addresses",
        ),
    ],
)
def test_a_provider_url_is_refused_naming_the_field(url, message):
    with pytest.raises(Invalid, match=message):
        validation.provider_url(url, "issuer")


@pytest.mark.parametrize("url", INSIDE)
def test_an_inside_address_in_any_form_is_a_public_url_problem(url):
    assert validation.public_url_problem(url) == "must not point at a loopback or private address"


def test_plain_http_is_a_public_url_problem():
    assert validation.public_url_problem("http://93.184.216.34/x").startswith("must use https")


@pytest.mark.parametrize(
    "url", ["https://93.184.216.34/jwks", "https://[2606:4700::1111]/x", "https://idp.example.com/"]
)
def test_a_public_address_or_a_name_is_no_problem_at_registration(url):
    assert validation.public_url_problem(url) is None


@pytest.mark.parametrize("url", INSIDE)
def test_a_client_url_to_an_inside_address_is_refused_unless_private_networks_are_allowed(url):
    with pytest.raises(Invalid, match="^jwks_uri must not point at a loopback or private address$"):
        validation.client_url(url, "jwks_uri", allow_private=False)
    assert validation.client_url(url, "jwks_uri", allow_private=True) == url


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("https://93.184.216.34/" + "x" * 2000, "jwks_uri is longer than 2000 characters"),
        ("https://93.184.216.34:99999/", "is not a valid URL"),
        ("http://93.184.216.34/jwks", "plain http is allowed only for loopback addresses"),
        ("ftp://93.184.216.34/jwks", "must be an absolute http\\(s\\) URL"),
    ],
)
def test_a_client_url_is_checked_as_a_provider_url_first(url, message):
    for allow_private in (False, True):
        with pytest.raises(Invalid, match=message):
            validation.client_url(url, "jwks_uri", allow_private=allow_private)


def test_a_client_url_to_a_public_address_literal_is_kept():
    assert validation.client_url("https://93.184.216.34/jwks", "jwks_uri", allow_private=False) == (
        "https://93.184.216.34/jwks"
    )


def test_plain_http_to_loopback_is_refused_for_a_client_unless_private_networks_are_allowed():
    with pytest.raises(Invalid, match="must use https"):
        validation.client_url("http://127.0.0.1:8000/jwks", "jwks_uri", allow_private=False)
    assert validation.client_url("http://127.0.0.1:8000/jwks", "jwks_uri", allow_private=True)
