"""``domains brand`` and ``domains scopes describe``: a domain's branding and what its consent page says of its
scopes, set from the command line (docs/branding.md)."""

from __future__ import annotations

from pathlib import Path

import click
from flask.cli import with_appcontext

from authsvc import admin
from authsvc.admin import branding, consent_texts
from authsvc.cli.common import admin_rules, domain_by_host, emit
from authsvc.core import logo

FIELDS = (
    "display_name",
    "primary_color",
    "background_color",
    "support_url",
    "support_email",
    "privacy_url",
    "terms_url",
    "default_locale",
)


@click.command("brand")
@click.option("--domain", "host", required=True, help="The domain's host.")
@click.option("--display-name", help="Shown in the header of its pages and e-mails.")
@click.option("--logo", "logo_path", type=click.Path(dir_okay=False, path_type=Path), help="PNG, JPEG or WebP file.")
@click.option("--primary-color", help="#RRGGBB: the main button's background.")
@click.option("--background-color", help="#RRGGBB: the page's background.")
@click.option("--support-url", help="https URL of the footer's support link.")
@click.option("--support-email", help="The support address, when there is no support URL.")
@click.option("--privacy-url", help="https URL of the footer's privacy link.")
@click.option("--terms-url", help="https URL of the footer's terms link.")
@click.option("--default-locale", help="A language tag such as en or de-CH.")
@click.option("--reset", is_flag=True, help="Back to the default look (before any other option is applied).")
@with_appcontext
def brand(host: str, logo_path: Path | None, reset: bool, **values: str | None) -> None:
    """Set the options given (the others stay); print the domain's branding as JSON."""
    domain = domain_by_host(host)
    actor = admin.command_line()
    changes = {field: values[field] for field in FIELDS if values.get(field) is not None}
    upload = read_logo(logo_path) if logo_path is not None else None
    with admin_rules():
        if reset:
            branding.reset_branding(actor, domain)
        if changes:
            branding.set_branding(actor, domain, changes)
        if upload is not None:
            branding.set_logo(actor, domain, upload)
    emit(branding.get_branding(actor, domain))


@click.command("describe")
@click.option("--domain", "host", required=True, help="The domain's host.")
@click.option("--scope", required=True, help="One of the domain's scopes, a reserved one, or a standard one.")
@click.option("--text", help="What the scope allows, as the consent page says it (one line, at most 300 characters).")
@click.option("--locale", help="A language tag such as en or de-CH; without it, for every locale without its own.")
@click.option("--remove", is_flag=True, help="Remove the description (of --locale, or the one for every locale).")
@with_appcontext
def describe_scope(host: str, scope: str, text: str | None, locale: str | None, remove: bool) -> None:
    """Set what the consent page says a scope allows; print the domain's descriptions as JSON."""
    if (text is None) == (not remove):
        raise click.UsageError("give --text, or --remove")
    domain = domain_by_host(host)
    actor = admin.command_line()
    with admin_rules():
        consent_texts.describe_scope(actor, domain, {"scope": scope, "locale": locale, "text": text})
    emit(consent_texts.scope_descriptions(actor, domain))


def read_logo(path: Path, option: str = "--logo") -> bytes:
    """The file's bytes (one past the logo's limit at most, enough to refuse it with the limit in the message)."""
    try:
        with path.open("rb") as file:
            return file.read(logo.MAX_BYTES + 1)
    except OSError as exc:
        raise click.ClickException(f"{option}: cannot read {str(path)!r}: {exc.strerror}") from None
