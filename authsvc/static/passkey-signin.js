// Signing in with a passkey on the sign-in page (authsvc.auth.passkey_signin): where the browser has
// conditional UI, it offers the domain's passkeys in the e-mail field's autofill
// (autocomplete="username webauthn"); the "Sign in with a passkey" button asks at once, in every
// browser with WebAuthn. The answer is posted in the passkey form's hidden "webauthn" field.
(function () {
  "use strict";
  const form = document.getElementById("passkey-form");
  if (!form || !window.PublicKeyCredential || !navigator.credentials) return;
  const button = document.getElementById("passkey-start");
  const field = form.querySelector('input[name="webauthn"]');
  const b64 = (s) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4)), (c) => c.charCodeAt(0));
  const text = (buffer) => btoa(String.fromCharCode(...new Uint8Array(buffer))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  let waiting = null; // the AbortController of the request the browser holds open
  let renewal = null;

  async function options() {
    const response = await fetch(form.dataset.options, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(`passkey options: ${response.status}`);
    const publicKey = await response.json();
    publicKey.challenge = b64(publicKey.challenge);
    for (const credential of publicKey.allowCredentials || []) credential.id = b64(credential.id);
    return publicKey;
  }

  function post(got) {
    field.value = JSON.stringify({
      id: got.id, rawId: text(got.rawId), type: got.type,
      response: {
        clientDataJSON: text(got.response.clientDataJSON),
        authenticatorData: text(got.response.authenticatorData),
        signature: text(got.response.signature),
        userHandle: got.response.userHandle ? text(got.response.userHandle) : null,
      },
      clientExtensionResults: {},
    });
    form.submit();
  }

  // mediation "conditional": wait for the person to pick a passkey in the autofill; undefined: ask now.
  async function ask(mediation) {
    if (waiting) waiting.abort();
    clearTimeout(renewal);
    const controller = new AbortController();
    waiting = controller;
    const publicKey = await options();
    if (mediation === "conditional") {
      // The challenge is good for the options' timeout: ask again with a fresh one before it ends.
      renewal = setTimeout(() => ask("conditional").catch(() => {}), Math.max(publicKey.timeout - 30000, 30000));
    }
    let got = null;
    try {
      got = await navigator.credentials.get({ publicKey, mediation, signal: controller.signal });
    } catch (error) {
      if (controller.signal.aborted) return; // replaced by a newer request
    }
    if (waiting === controller) waiting = null;
    if (got) post(got);
    else if (mediation !== "conditional") conditional(); // cancelled: the autofill offers them again
  }

  function conditional() {
    if (!PublicKeyCredential.isConditionalMediationAvailable) return;
    PublicKeyCredential.isConditionalMediationAvailable().then((available) => {
      if (available) ask("conditional").catch(() => {});
    });
  }

  form.hidden = false;
  button.addEventListener("click", (event) => {
    event.preventDefault();
    ask(undefined).catch(() => {});
  });
  conditional();
})();
