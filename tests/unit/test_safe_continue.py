"""One function decides every redirect after sign-in and sign-out: only our own origin passes."""

import pytest

from authsvc.core.security import safe_continue

ORIGIN = "https://auth.example.com"


@pytest.mark.parametrize(
    "target",
    [
        "/",
        "/auth/oauth/authorize?response_type=code&client_id=abc",
        "/path/with%2Fencoded%2F%2Fslashes",
        "https://auth.example.com/x",
        "HTTPS://AUTH.EXAMPLE.COM/x",
        "https://auth.example.com:443/x",
    ],
)
def test_our_own_paths_and_urls_pass(target):
    assert safe_continue(target, ORIGIN) == target


@pytest.mark.parametrize(
    "target",
    [
        "https://evil.example.net/",
        "//evil.example.net/",
        "///evil.example.net/",
        "/\\evil.example.net/",
        "\\\\evil.example.net",
        "\\/evil.example.net",
        "javascript:alert(1)",
        "JavaScript:alert(1)",
        "jAvAsCrIpT:alert(1)",
        " javascript:alert(1)",
        "java\tscript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "vbscript:msgbox(1)",
        "https:evil.example.net",
        "https:/evil.example.net",
        "http://auth.example.com.evil.example.net/",
        "https://auth.example.com@evil.example.net/",
        "https://user:pass@auth.example.com/",
        "https://evil.example.net\\@auth.example.com/",
        "https://evil.example.net#@auth.example.com",
        "/\t/evil.example.net",
        "/\n/evil.example.net",
        "/\r\n/evil.example.net",
        "/\x00/evil.example.net",
        "\x7f//evil.example.net",
        "%2F%2Fevil.example.net",
        "evil.example.net",
        "ftp://auth.example.com/x",
        "https://evil.example.net:443/",
        "https://[::1]/",
        "https://xn--uth-example-4ob.com/",
        "https://auth\u3002example.com/",
        "/" + "a" * 3000,
        "",
        None,
    ],
)
def test_anything_else_falls_back_to_the_default(target):
    assert safe_continue(target, ORIGIN, default="/fallback") == "/fallback"


@pytest.mark.parametrize(
    "target", ["http://auth.example.com/x", "https://auth.example.com:8443/x", "http://auth.example.com:443/x"]
)
def test_our_host_on_another_scheme_or_port_is_another_origin(target):
    assert safe_continue(target, ORIGIN, default="/fallback") == "/fallback"


@pytest.mark.parametrize("origin", ["http://localhost:5000", "https://[::1]:8443"])
def test_the_origin_port_must_match_exactly(origin):
    assert safe_continue(origin + "/x", origin) == origin + "/x"
    assert safe_continue(origin.rsplit(":", 1)[0] + ":1/x", origin, default="") == ""
