#!/usr/bin/env node
// Pushed authorisation requests with panva's openid-client (v6): discovery, sign in (POST /auth/signin ->
// `user` cookie), buildAuthorizationUrlWithPAR (code + PKCE + nonce + state), optionally with a signed
// request object (buildAuthorizationUrlWithJAR) and private_key_jwt client authentication; the browser's
// GET carries only client_id and request_uri; the code exchange validates the ID token. Then the same
// request_uri again must be refused (one use). Prints one JSON object.
//
// node par.mjs --issuer URL --client-id ID --redirect-uri URI --email E --password P
//              (--client-secret S | --jwk-file PATH)   [--scope "openid email"]
// --jwk-file: the application's private EC P-256 JWK (with "kid"): private_key_jwt and a request object.
// Exit code 0 when every step passed, 1 otherwise (the JSON has "ok" and "error").
import { readFileSync } from 'node:fs'
import * as client from 'openid-client'

import { cookieFrom, harnessArgs, report } from './harness.mjs'

const args = harnessArgs({ 'client-secret': { type: 'string' }, 'jwk-file': { type: 'string' } })
const { result, step } = report()

try {
  const issuer = args.issuer
  const redirectUri = args['redirect-uri']
  const scope = args.scope ?? 'openid email'
  let signingKey
  let clientAuth = client.ClientSecretBasic(args['client-secret'])
  if (args['jwk-file']) {
    const jwk = JSON.parse(readFileSync(args['jwk-file'], 'utf8'))
    const key = await crypto.subtle.importKey('jwk', jwk, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign'])
    signingKey = { key, kid: jwk.kid }
    clientAuth = client.PrivateKeyJwt(signingKey)
  }
  const config = await client.discovery(new URL(issuer), args['client-id'], {}, clientAuth, {
    execute: [client.allowInsecureRequests],
  })
  const as = config.serverMetadata()
  step('discovery', { par: as.pushed_authorization_request_endpoint, request: as.request_parameter_supported })

  const signin = await fetch(new URL('/auth/signin', issuer), {
    method: 'POST',
    body: new URLSearchParams({ email: args.email, password: args.password }),
    redirect: 'manual',
  })
  const cookie = cookieFrom(signin, 'user')
  if (!cookie) throw new Error(`sign-in answered ${signin.status} without a user cookie`)

  const codeVerifier = client.randomPKCECodeVerifier()
  const nonce = client.randomNonce()
  const state = client.randomState()
  let parameters = {
    redirect_uri: redirectUri,
    scope,
    code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    nonce,
    state,
  }
  if (signingKey) {
    // The request object is pushed: PAR's body holds it and the client authentication only.
    parameters = (await client.buildAuthorizationUrlWithJAR(config, parameters, signingKey)).searchParams
    step('jar', { parameters: [...parameters.keys()] })
  }
  const url = await client.buildAuthorizationUrlWithPAR(config, parameters)
  step('par', { query: [...url.searchParams.keys()].sort(), request_uri: url.searchParams.get('request_uri') })

  const answer = await fetch(url, { redirect: 'manual', headers: { cookie: `user=${cookie}` } })
  const location = answer.headers.get('location')
  if (answer.status !== 302 || !location?.startsWith(redirectUri)) {
    throw new Error(`authorize answered ${answer.status} ${location ?? (await answer.text()).slice(0, 300)}`)
  }
  const tokens = await client.authorizationCodeGrant(config, new URL(location), {
    pkceCodeVerifier: codeVerifier,
    expectedNonce: nonce,
    expectedState: state,
    idTokenExpected: true,
  })
  step('token', { claims: tokens.claims(), scope: tokens.scope })

  const again = await fetch(url, { redirect: 'manual', headers: { cookie: `user=${cookie}` } })
  step('replay', { status: again.status, body: await again.json().catch(() => null) })
  result.ok = true
} catch (error) {
  result.error = `${error?.name ?? 'Error'}: ${error?.error ?? ''} ${error?.error_description ?? error?.message ?? error}`
}
process.stdout.write(JSON.stringify(result) + '\n')
process.exit(result.ok ? 0 : 1)
