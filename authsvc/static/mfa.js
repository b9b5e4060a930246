// Passkeys (WebAuthn) on the second-factor pages: read the server's options from the page,
// ask the browser's authenticator, and post its answer in the form's hidden "webauthn" field.
(function () {
  "use strict";
  const optionsElement = document.getElementById("webauthn-options");
  const button = document.getElementById("webauthn-start");
  if (!optionsElement || !button || !window.PublicKeyCredential) {
    if (button) button.hidden = true;
    return;
  }
  const b64 = (s) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4)), (c) => c.charCodeAt(0));
  const text = (buffer) => btoa(String.fromCharCode(...new Uint8Array(buffer))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  const options = JSON.parse(optionsElement.textContent);
  const form = button.closest("form");
  const field = form.querySelector('input[name="webauthn"]');
  button.addEventListener("click", async (event) => {
    event.preventDefault();
    options.challenge = b64(options.challenge);
    for (const list of [options.allowCredentials || [], options.excludeCredentials || []]) {
      for (const credential of list) credential.id = b64(credential.id);
    }
    let answer;
    if (options.user) {
      options.user.id = b64(options.user.id);
      const created = await navigator.credentials.create({ publicKey: options });
      answer = {
        id: created.id, rawId: text(created.rawId), type: created.type,
        response: {
          clientDataJSON: text(created.response.clientDataJSON),
          attestationObject: text(created.response.attestationObject),
          transports: created.response.getTransports ? created.response.getTransports() : [],
        },
      };
    } else {
      const got = await navigator.credentials.get({ publicKey: options });
      answer = {
        id: got.id, rawId: text(got.rawId), type: got.type,
        response: {
          clientDataJSON: text(got.response.clientDataJSON),
          authenticatorData: text(got.response.authenticatorData),
          signature: text(got.response.signature),
          userHandle: got.response.userHandle ? text(got.response.userHandle) : null,
        },
      };
    }
    field.value = JSON.stringify(answer);
    form.submit();
  });
})();
