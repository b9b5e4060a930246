"""The input rules of authsvc/core/validation.py as plain functions: no app, no HTTP.

The URL validators are tests/unit/test_validation_urls.py; the same rules through the admin API,
the CLI and registration are in tests/api/.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address

import pytest

from authsvc.core import validation
from authsvc.core.validation import Invalid

# Host names


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("auth.example.com", "auth.example.com"),
        ("  Auth.Example.COM ", "auth.example.com"),
        ("localhost", "localhost"),
        ("10.0.0.1", "10.0.0.1"),
        ("::1", "::1"),
        ("a-b.example", "a-b.example"),
    ],
)
def test_a_host_is_kept_lowercased_and_stripped(given, kept):
    assert validation.host(given) == kept


@pytest.mark.parametrize(
    "given", ["", "-a.example", "a-.example", "a..example", "a_b.example", "a.example/path", "x" * 64 + ".example"]
)
def test_what_is_no_host_name_is_refused(given):
    with pytest.raises(Invalid, match="is not a host name"):
        validation.host(given)


# Scopes


def test_scopes_keep_their_first_order_without_repeats():
    assert validation.scopes("public  mqtt.read public\tmqtt.write") == "public mqtt.read mqtt.write"


@pytest.mark.parametrize(("given", "fragment"), [("", "at least one"), ("   ", "at least one"), ('a"b', "not a valid")])
def test_empty_or_malformed_scopes_are_refused(given, fragment):
    with pytest.raises(Invalid, match=fragment):
        validation.scopes(given)


def test_a_scope_the_domain_does_not_know_is_refused_naming_the_known_ones():
    assert validation.scopes("public", known=["public", "admin"]) == "public"
    with pytest.raises(Invalid, match="unknown scope 'mqtt.read'; the domain knows: public admin"):
        validation.scopes("public mqtt.read", known=["public", "admin"])


# E-mail addresses and passwords


def test_an_email_address_is_lowercased_and_stripped():
    assert validation.email(" Ada@Example.COM ") == "ada@example.com"


@pytest.mark.parametrize("given", ["ada", "ada@", "@example.com", "a@b@c", "a b@example.com", "a\x00@example.com"])
def test_what_is_no_email_address_is_refused(given):
    with pytest.raises(Invalid, match="is not an e-mail address"):
        validation.email(given)


def test_an_email_address_longer_than_320_characters_is_refused():
    with pytest.raises(Invalid):
        validation.email("a" * 310 + "@example.com")


# Directories name people in namespaces that are not on the public Internet: Active Directory's
# UPN suffixes (corp.local), RFC 6761's .test, single-label hosts. They are real accounts.
SPECIAL_USE = ["alice@corp.local", "bob@qa.test", "carol@intranet", "dave@host.localhost", "erin@x.invalid"]


@pytest.mark.parametrize("given", SPECIAL_USE)
def test_addresses_under_special_use_names_are_e_mail_addresses(given):
    assert validation.email(given.upper()) == given


@pytest.mark.parametrize(
    "given",
    [
        "a..b@example.com",
        ".a@example.com",
        "a.@example.com",
        "a@-example.com",
        "a@example..com",
        "a@exam_ple.com",
        "a" * 65 + "@example.com",
        "a" + "\u0301" * 64 + "@example.com",
        "Ada <ada@example.com>",
        "ada@[10.0.0.1]",
    ],
)
def test_what_rfc_5321_refuses_is_no_email_address(given):
    with pytest.raises(Invalid, match="is not an e-mail address"):
        validation.email(given)


@pytest.mark.parametrize("given", [*SPECIAL_USE, "ada@example.com", "a..b@example.com", "ada@[10.0.0.1]", "ada"])
def test_scims_emails_and_the_sign_in_address_follow_the_same_rule(given):
    """SCIM's ``emails`` are pydantic's EmailStr (scim2-models): an address is valid on both or on neither."""
    from pydantic import EmailStr, TypeAdapter, ValidationError

    try:
        TypeAdapter(EmailStr).validate_python(given)
        as_scim = True
    except ValidationError:
        as_scim = False
    try:
        validation.email(given)
        as_sign_in = True
    except Invalid:
        as_sign_in = False
    assert as_scim == as_sign_in


@pytest.mark.parametrize(("given", "fragment"), [("short", "at least 8"), ("x" * 1025, "at most 1024")])
def test_passwords_between_8_and_1024_characters(given, fragment):
    assert validation.password("x" * 8) == "x" * 8
    assert validation.password("x" * 1024) == "x" * 1024
    with pytest.raises(Invalid, match=fragment):
        validation.password(given)


# Lifetimes


@pytest.mark.parametrize(("given", "kept"), [(None, None), (0, None), (1, 1), (validation.MAX_TTL, validation.MAX_TTL)])
def test_a_lifetime_of_zero_means_none(given, kept):
    assert validation.ttl(given) == kept


@pytest.mark.parametrize("given", [-1, validation.MAX_TTL + 1, True, 1.5, "60"])
def test_a_lifetime_is_a_whole_number_of_seconds_within_ten_years(given):
    with pytest.raises(Invalid, match="whole number of seconds"):
        validation.ttl(given)


# Ids from paths and queries


@pytest.mark.parametrize(
    ("given", "found"),
    [
        ("1", 1),
        ("0042", 42),
        (str(validation.MAX_INTEGER), validation.MAX_INTEGER),
        (str(validation.MAX_INTEGER + 1), None),
        ("12345678901", None),
        ("", None),
        (None, None),
        ("-1", None),
        ("1.0", None),
        ("²", None),
        ("١", None),
    ],
)
def test_a_record_id_is_ascii_digits_within_sql_integer(given, found):
    assert validation.record_id(given) == found


@pytest.mark.parametrize(
    ("given", "could_be"),
    [("a1b2c3", True), ("f" * 32, True), ("f" * 33, False), ("", False), (None, False), ("a-b", False), ("é", False)],
)
def test_a_text_id_is_short_ascii_letters_and_digits(given, could_be):
    assert validation.text_id(given) is could_be


# JSON bodies


def test_an_empty_body_is_the_given_empty_value():
    assert validation.json_body(b"") is None
    assert validation.json_body(b"", {}) == {}
    assert validation.json_object(b"") == {}


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"{nope", "not valid JSON"),
        (b"\xff\xfe\xfa", "not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"name": "\\ud800"}', "lone surrogate"),
        (b'[{"\\udfff": 1}]', "lone surrogate"),
    ],
)
def test_bodies_that_are_no_usable_json_are_refused(body, fragment):
    with pytest.raises(Invalid, match=fragment):
        validation.json_body(body)


@pytest.mark.parametrize("body", [b"[1, 2]", b"null", b'"text"', b"3"])
def test_a_json_object_is_required_where_one_is_expected(body):
    with pytest.raises(Invalid, match="must be an object"):
        validation.json_object(body)


def test_a_json_object_is_read_as_is():
    assert validation.json_object(b'{"a": [1, {"b": null}]}') == {"a": [1, {"b": None}]}


# Addresses


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("127.0.0.1", IPv4Address("127.0.0.1")),
        ("2130706433", IPv4Address("127.0.0.1")),
        ("0x7f000001", IPv4Address("127.0.0.1")),
        ("0177.0.0.1", IPv4Address("127.0.0.1")),
        ("127.1", IPv4Address("127.0.0.1")),
        ("::1", IPv6Address("::1")),
        ("example.com", None),
        ("1.2.3.4.5", None),
    ],
)
def test_an_address_literal_is_read_in_every_form_the_resolver_reads(host, address):
    assert validation.address_literal(host) == address


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("93.184.216.34", True),
        ("2606:2800:220:1:248:1893:25c8:1946", True),
        ("127.0.0.1", False),
        ("10.0.0.1", False),
        ("169.254.169.254", False),
        ("100.64.0.1", False),
        ("224.0.0.1", False),
        ("::ffff:10.0.0.1", False),
        ("64:ff9b::a00:1", False),
        ("2002::1", False),
    ],
)
def test_only_global_unicast_addresses_are_public(address, public):
    from ipaddress import ip_address

    assert validation.is_public_address(ip_address(address)) is public


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("a", False),
        # RFC 6761 6.3: every name under localhost is loopback, so a second tenant can live on this machine.
        ("acme.localhost", True),
        ("a.b.localhost", True),
        ("ACME.LOCALHOST", True),
        ("localhost.example.com", False),
        ("notlocalhost", False),
        ("acme.localhost.evil", False),
        (".localhost", False),
    ],
)
def test_loopback_hosts(host, loopback):
    assert validation.is_loopback(host) is loopback
