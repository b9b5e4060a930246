#!/usr/bin/env node
// Relying-party harness: panva's openid-client (v6, ESM) against an authsvc domain.
// Discovery, code + PKCE + nonce (following authsvc's sign-in: POST /auth/signin -> `user` cookie),
// ID token validation (its own JWKS fetch), UserInfo, refresh, RP-initiated logout; then prompt=none
// after logout must come back as login_required (OIDC Core 3.1.2.6); then max_age=0 must send the browser to sign
// in again, and the new ID token's auth_time must satisfy it. Prints one JSON object.
//
// node rp.mjs --issuer URL --client-id ID [--client-secret S] --redirect-uri URI
//             (--email E --password P | --cookie VALUE) [--scope "openid profile email"]
//             [--post-logout-redirect-uri URI] [--id-token-alg RS256|ES256] [--auth basic|post|none]
//             [--no-logout]   (skip step 7 and 8: no end_session_endpoint)
// Every option can come from the environment instead: OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET,
// OIDC_REDIRECT_URI, OIDC_EMAIL, OIDC_PASSWORD, OIDC_COOKIE, OIDC_SCOPE, OIDC_POST_LOGOUT_REDIRECT_URI, ...
// Exit code 0 when every step passed, 1 otherwise (the JSON has "ok" and "error").
import { parseArgs } from 'node:util'
import * as client from 'openid-client'

import { cookieFrom, report } from './harness.mjs'

const { values: args } = parseArgs({
  options: {
    issuer: { type: 'string' },
    'client-id': { type: 'string' },
    'client-secret': { type: 'string' },
    'redirect-uri': { type: 'string' },
    email: { type: 'string' },
    password: { type: 'string' },
    cookie: { type: 'string' },
    scope: { type: 'string' },
    'post-logout-redirect-uri': { type: 'string' },
    'id-token-alg': { type: 'string' },
    auth: { type: 'string' },
    'no-logout': { type: 'boolean' },
  },
})
const env = (name) => process.env['OIDC_' + name.toUpperCase().replaceAll('-', '_')]
const opt = (name) => args[name] ?? env(name)

const issuer = opt('issuer')
const clientId = opt('client-id')
const clientSecret = opt('client-secret')
const redirectUri = opt('redirect-uri')
const scope = opt('scope') ?? 'openid profile email'
const postLogout = opt('post-logout-redirect-uri')
const { result, step } = report()

async function authorize(config, cookie, params) {
  // The browser's part: GET the authorize URL with the session cookie; the answer must be a redirect
  // to our redirect_uri (a redirect to /auth/login means the session was not accepted).
  const url = client.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope, ...params })
  const response = await fetch(url, { redirect: 'manual', headers: cookie ? { cookie: `user=${cookie}` } : {} })
  const location = response.headers.get('location')
  if (![302, 303].includes(response.status) || !location) {
    throw new Error(`authorize answered ${response.status} without a redirect: ${(await response.text()).slice(0, 200)}`)
  }
  const target = new URL(location, url)
  if (!target.href.startsWith(redirectUri)) throw new Error(`authorize redirected to ${target.href}, not to the client`)
  return target
}

try {
  if (!issuer || !clientId || !redirectUri) throw new Error('--issuer, --client-id and --redirect-uri are required')
  const auth = opt('auth') ?? (clientSecret ? 'basic' : 'none')
  const clientAuth =
    auth === 'none' ? client.None() : auth === 'post' ? client.ClientSecretPost(clientSecret) : client.ClientSecretBasic(clientSecret)
  const metadata = { client_id: clientId }
  if (opt('id-token-alg')) metadata.id_token_signed_response_alg = opt('id-token-alg')

  // 1. Discovery (issuer must equal the document's "issuer"); plain http is allowed on loopback only by this flag.
  const config = await client.discovery(new URL(issuer), clientId, metadata, clientAuth, {
    execute: [client.allowInsecureRequests],
  })
  const as = config.serverMetadata()
  step('discovery', { issuer: as.issuer, jwks_uri: as.jwks_uri, end_session_endpoint: as.end_session_endpoint })

  // 2. Sign in as authsvc's clients do (or take a session cookie).
  let cookie = opt('cookie')
  if (!cookie) {
    const response = await fetch(new URL('/auth/signin', issuer), {
      method: 'POST',
      body: new URLSearchParams({ email: opt('email') ?? '', password: opt('password') ?? '' }),
      redirect: 'manual',
    })
    cookie = cookieFrom(response, 'user')
    if (!cookie) throw new Error(`sign-in answered ${response.status} without a user cookie`)
    step('signin', { status: response.status })
  }

  // 3. Code + PKCE (S256) + nonce + state.
  const codeVerifier = client.randomPKCECodeVerifier()
  const codeChallenge = await client.calculatePKCECodeChallenge(codeVerifier)
  const nonce = client.randomNonce()
  const state = client.randomState()
  const callback = await authorize(config, cookie, {
    code_challenge: codeChallenge,
    code_challenge_method: 'S256',
    nonce,
    state,
  })
  step('authorize', { redirected_to: callback.origin + callback.pathname })

  // 4. Token exchange; openid-client validates the ID token (JWKS fetched from jwks_uri, alg, iss, aud, exp,
  //    iat, nonce, azp) and the response's state.
  const tokens = await client.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: codeVerifier,
    expectedNonce: nonce,
    expectedState: state,
    idTokenExpected: true,
  })
  const claims = tokens.claims()
  const header = JSON.parse(Buffer.from(tokens.id_token.split('.')[0], 'base64url'))
  step('token', { id_token_header: header, claims, scope: tokens.scope, has_refresh_token: !!tokens.refresh_token })

  // 5. UserInfo: sub must equal the ID token's (checked by openid-client).
  const userinfo = await client.fetchUserInfo(config, tokens.access_token, claims.sub)
  step('userinfo', { userinfo })

  // 6. Refresh: a fresh ID token, same sub/aud/auth_time/sid.
  let refreshedIdToken = tokens.id_token
  if (tokens.refresh_token) {
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token)
    const rclaims = refreshed.claims()
    if (!rclaims) throw new Error('no id_token in the refresh response')
    for (const name of ['sub', 'aud', 'auth_time', 'sid', 'azp']) {
      if (JSON.stringify(rclaims[name]) !== JSON.stringify(claims[name])) throw new Error(`refreshed ID token changed ${name}`)
    }
    refreshedIdToken = refreshed.id_token
    step('refresh', { claims: rclaims, new_access_token: refreshed.access_token !== tokens.access_token })
  }

  // 7. RP-initiated logout: build the end_session URL, follow it with the session cookie.
  if (!opt('no-logout')) {
    const logoutState = client.randomState()
    const endSession = client.buildEndSessionUrl(config, {
      id_token_hint: refreshedIdToken,
      ...(postLogout ? { post_logout_redirect_uri: postLogout, state: logoutState } : {}),
    })
    step('end_session_url', { url: endSession.href })
    const response = await fetch(endSession, { redirect: 'manual', headers: { cookie: `user=${cookie}` } })
    const location = response.headers.get('location')
    if (postLogout) {
      const expected = `${postLogout}${postLogout.includes('?') ? '&' : '?'}state=${logoutState}`
      if (location !== expected) throw new Error(`end_session answered ${response.status} location ${location}`)
    }
    step('logout', { status: response.status, location })

    // 8. The session is gone: prompt=none must come back to the client as login_required.
    // A valid request in every other way (PKCE too), so that the only error left is the missing session.
    const after = await authorize(config, cookie, {
      prompt: 'none',
      nonce: client.randomNonce(),
      state: logoutState,
      code_challenge: codeChallenge,
      code_challenge_method: 'S256',
    })
    try {
      await client.authorizationCodeGrant(config, after, { expectedState: logoutState, pkceCodeVerifier: codeVerifier })
      throw new Error('prompt=none after logout returned a code')
    } catch (error) {
      if (!(error instanceof client.AuthorizationResponseError) || error.error !== 'login_required') {
        throw new Error(`prompt=none after logout: ${error?.error ?? ''} ${error?.error_description ?? error?.message}`)
      }
      step('prompt_none_after_logout', { error: error.error })
    }
  }

  // 9. max_age=0 (as prompt=login): authsvc sends the browser to its sign-in page even with a session; the
  //    sign-in made there (POST /auth/signin with `continue`) satisfies the request, and openid-client checks
  //    the new ID token's auth_time against max_age.
  if (opt('email')) {
    const verifier = client.randomPKCECodeVerifier()
    const again = {
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      nonce: client.randomNonce(),
      state: client.randomState(),
      max_age: '0',
    }
    const url = client.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope, ...again })
    const asked = await fetch(url, { redirect: 'manual', headers: { cookie: `user=${cookie}` } })
    const signinPage = new URL(asked.headers.get('location') ?? '', url)
    if (asked.status !== 303 || signinPage.pathname !== '/auth/login') {
      throw new Error(`max_age=0 answered ${asked.status} ${signinPage.href}, not the sign-in page`)
    }
    const signedIn = await fetch(new URL('/auth/signin', issuer), {
      method: 'POST',
      body: new URLSearchParams({
        email: opt('email'),
        password: opt('password') ?? '',
        continue: signinPage.searchParams.get('continue') ?? '',
      }),
      redirect: 'manual',
    })
    const fresh = cookieFrom(signedIn, 'user')
    const back = await fetch(new URL(signedIn.headers.get('location') ?? '', issuer), {
      redirect: 'manual',
      headers: { cookie: `user=${fresh}` },
    })
    const callback = new URL(back.headers.get('location') ?? '', issuer)
    if (back.status !== 302 || !callback.href.startsWith(redirectUri)) {
      throw new Error(`after the new sign-in authorize answered ${back.status} ${callback.href}`)
    }
    const renewed = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedNonce: again.nonce,
      expectedState: again.state,
      maxAge: 0,
      idTokenExpected: true,
    })
    step('max_age', { status: asked.status, signin_page: signinPage.pathname, claims: renewed.claims() })
  }
  result.ok = true
} catch (error) {
  result.error = { name: error?.name, code: error?.code, message: error?.message, cause: error?.cause }
}
console.log(JSON.stringify(result, null, 2))
process.exit(result.ok ? 0 : 1)
