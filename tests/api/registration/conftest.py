"""Fixtures of the dynamic registration tests: the person who sets the domain up."""

from __future__ import annotations

from tests.helpers import client_registration

setup_person = client_registration.setup_person
