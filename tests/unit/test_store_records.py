"""The typed records features keep in the store (authsvc.core.store), stored by one serializer
(authsvc.core.records): each reads back what it wrote, under the names records written before this
version used, so a deploy does not lose a sign-in in flight."""

from __future__ import annotations

from dataclasses import asdict

from authsvc.auth.mfa.pending import PendingSignIn
from authsvc.auth.session_record import SignInSession
from authsvc.core import records
from authsvc.oauth.codes import IssuedCode
from authsvc.sso import flow_state
from authsvc.sso.saml_flow import Handoff


def test_a_pending_sign_in_keeps_continue_under_its_stored_name():
    record = PendingSignIn(user=1, domain=2, continue_url="/next", via="password", enrol=False, binding="b" * 64)
    stored = records.dump(record)
    assert stored == {
        "user": 1,
        "domain": 2,
        "continue": "/next",
        "via": "password",
        "enrol": False,
        "binding": "b" * 64,
    }
    assert records.load(PendingSignIn, stored) == record


def test_an_oauth_flow_and_a_saml_flow_read_back_as_their_own_kind():
    oauth = flow_state.OAuthFlow(
        provider="p1", continue_url="/x", browser="d", link_user=None, verifier="v", nonce="n", callback="https://cb"
    )
    saml = flow_state.SamlFlow(provider="p2", continue_url="", browser="d", link_user=7, request_id="id-1")
    assert "protocol" not in records.dump(oauth) and records.dump(saml)["protocol"] == "saml"
    assert flow_state.from_json({**records.dump(oauth), "holder": "198.51.100.7"}) == flow_state.OAuthFlow(
        **{**asdict(oauth), "holder": "198.51.100.7"}
    )
    assert flow_state.from_json(records.dump(saml)) == saml
    assert flow_state.from_json(None) is None


def test_an_oauth_flow_without_a_nonce_is_plain_oauth2():
    stored = {"provider": "p", "continue": "", "browser": "d", "link_user": None, "verifier": "v", "callback": "c"}
    assert flow_state.from_json(stored).nonce is None


def test_a_saml_handoff_reads_back():
    handoff = Handoff(
        provider="p",
        subject="saml-ada",
        attributes={"mail": ["ada@example.com"]},
        continue_url="/after",
        browser=None,
        link_user=None,
        name_id={"format": "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent", "text": "saml-ada"},
        session_index="s-1",
    )
    assert records.dump(handoff)["continue"] == "/after" and "continue_url" not in records.dump(handoff)
    assert records.load(Handoff, records.dump(handoff)) == handoff


def test_an_issued_code_reads_back_with_the_sign_in_behind_it():
    issued = IssuedCode(
        user=1,
        client=2,
        redirect_uri="https://app.example.com/callback",
        scope="openid",
        code_challenge=None,
        code_challenge_method=None,
        nonce="n",
        auth_time=1_700_000_000,
        amr=["pwd", "mfa"],
        sid="sid",
        dpop_jkt="j" * 43,
        resources=["https://api.example.com/"],
    )
    assert records.load(IssuedCode, asdict(issued)) == issued
    # A code written without the OpenID Connect fields still reads.
    legacy = {
        k: v
        for k, v in asdict(issued).items()
        if k not in {"nonce", "auth_time", "amr", "sid", "dpop_jkt", "resources"}
    }
    assert records.load(IssuedCode, legacy).sid is None
    assert records.load(IssuedCode, legacy).dpop_jkt is None and records.load(IssuedCode, legacy).resources is None


def test_a_sign_in_session_reads_back_and_a_saml_one_keeps_its_logout_names():
    plain = SignInSession(user=1, domain=2, created=1_700_000_000_123, sid="s", amr=["pwd"], auth_time=1_700_000_000)
    assert "saml" not in records.dump(plain)
    assert records.load(SignInSession, records.dump(plain)) == plain
    saml = SignInSession(**{**asdict(plain), "amr": ["fed"], "saml": {"provider": "p", "session_index": "i"}})
    assert records.dump(saml)["saml"] == {"provider": "p", "session_index": "i"}
    assert records.load(SignInSession, records.dump(saml)) == saml


def test_a_session_written_before_sids_and_auth_time_still_reads():
    old = records.load(SignInSession, {"user": 1, "domain": 2, "created": 1_700_000_000_999})
    assert (old.sid, old.amr, old.auth_time) == (None, None, 1_700_000_000)
