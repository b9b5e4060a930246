"""The console's signing keys page: the domain's keys and their states, and rotation."""

from __future__ import annotations

from flask import flash, redirect, url_for
from werkzeug.wrappers import Response

from authsvc import admin
from authsvc.admin.console import base
from authsvc.admin.console.base import bp, console_page
from authsvc.admin.console.forms import RotateKeyForm
from authsvc.core.models import Domain


@bp.route("/domains/<domain_id>/signing_keys", methods=["GET", "POST"])
@console_page
def signing_keys(actor: admin.Actor, domain: Domain) -> Response:
    form = RotateKeyForm()

    def rotate() -> Response:
        base.require_change(actor, domain)
        rotated = admin.rotate_signing_key(actor, domain, {"alg": form.alg.data})
        flash(
            f"New {rotated['alg']} key {rotated['kid']} is current; "
            "the previous one stays published until its tokens expire."
        )
        return redirect(url_for("console.signing_keys", domain_id=domain.id), 303)

    return base.form_page(form, "console/signing_keys.html", rotate, keys=admin.signing_keys(actor, domain))
