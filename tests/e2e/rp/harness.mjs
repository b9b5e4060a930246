// What the openid-client harnesses (rp.mjs, par.mjs, dpop.mjs, fapi.mjs) share: their report, the session
// cookie read from a sign-in's answer, a record of every request openid-client makes, and DPoP proofs made by
// hand for the requests openid-client would never send.
import { parseArgs } from 'node:util'

import { exportJWK, SignJWT } from 'jose'

// The command line every harness takes (--issuer, --client-id, --redirect-uri, --email, --password,
// --scope), with the options of its own.
export function harnessArgs(options = {}) {
  const common = ['issuer', 'client-id', 'redirect-uri', 'email', 'password', 'scope']
  return parseArgs({
    options: { ...Object.fromEntries(common.map((name) => [name, { type: 'string' }])), ...options },
  }).values
}

// The one JSON object a harness prints: "ok", its steps in order, and the error that stopped it.
export function report() {
  const result = { ok: false, steps: [] }
  const step = (name, data = {}) => result.steps.push({ step: name, ...data })
  return { result, step }
}

export function cookieFrom(response, name) {
  for (const line of response.headers.getSetCookie()) {
    const [pair] = line.split(';')
    const eq = pair.indexOf('=')
    if (pair.slice(0, eq).trim() === name) return pair.slice(eq + 1)
  }
  return undefined
}

// A fetch for openid-client's customFetch that records each request: its path and status, the DPoP proof and
// the Authorization scheme it sent, the nonce the server answered, and whether it carried a client assertion.
export function recorder() {
  const exchanges = []
  async function recordingFetch(url, options) {
    const response = await fetch(url, options)
    const sent = new Headers(options?.headers)
    const body = typeof options?.body === 'string' ? options.body : options?.body?.toString?.() ?? ''
    exchanges.push({
      path: new URL(url).pathname,
      status: response.status,
      proof: sent.get('dpop'),
      nonce: response.headers.get('dpop-nonce'),
      authorization: (sent.get('authorization') ?? '').split(' ')[0],
      assertion: new URLSearchParams(body).has('client_assertion'),
    })
    return response
  }
  return { exchanges, recordingFetch }
}

// A DPoP proof (RFC 9449 4.2) made as openid-client makes them, bound to accessToken by its hash (ath).
export async function proofFor(keyPair, htm, htu, accessToken, nonce) {
  const ath = Buffer.from(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(accessToken))).toString('base64url')
  return new SignJWT({ htm, htu, ath, nonce, jti: crypto.randomUUID() })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk: await exportJWK(keyPair.publicKey) })
    .setIssuedAt()
    .sign(keyPair.privateKey)
}
