#!/usr/bin/env node
// FAPI 2.0 harness (docs/fapi.md): panva's openid-client (v6) as a confidential client of a `fapi2` domain.
// private_key_jwt (ES256, aud the issuer), PKCE S256, every authorisation request pushed (RFC 9126) with a DPoP
// proof (RFC 9449 10.1: the code is bound to the key), the server's use_dpop_nonce answered by openid-client's own
// retry, the 303 authorisation response checked for iss (RFC 9207), the code exchanged with DPoP, UserInfo and
// inspect with DPoP, two refreshes with the same key and the same refresh token (the profile does not rotate);
// then the refusals: the token as Bearer, a proof made for another URL, a replayed proof (its jti).
// Prints one JSON object; exit code 0 when every step passed.
//
// node fapi.mjs --issuer URL --client-id ID --redirect-uri URI --email E --password P --jwk-file PATH [--scope S]
// --jwk-file: the application's private EC P-256 JWK (with "kid").
import { readFileSync } from 'node:fs'
import { calculateJwkThumbprint, exportJWK } from 'jose'
import * as client from 'openid-client'

import { cookieFrom, harnessArgs, proofFor, recorder, report } from './harness.mjs'

const args = harnessArgs({ 'jwk-file': { type: 'string' } })
const issuer = args.issuer
const redirectUri = args['redirect-uri']
const scope = args.scope ?? 'openid profile email'
const { result, step } = report()

// Every request openid-client makes, with its status and the DPoP headers: what the server asked and answered.
const { exchanges, recordingFetch } = recorder()
const since = (mark) =>
  exchanges.slice(mark).map(({ path, status, authorization, assertion, proof }) => ({
    path,
    status,
    authorization,
    assertion,
    proof: Boolean(proof),
  }))

try {
  const jwk = JSON.parse(readFileSync(args['jwk-file'], 'utf8'))
  const key = await crypto.subtle.importKey('jwk', jwk, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign'])
  // ID tokens of a fapi2 domain are ES256: the client expects nothing else.
  const config = await client.discovery(
    new URL(issuer),
    args['client-id'],
    { id_token_signed_response_alg: 'ES256' },
    client.PrivateKeyJwt({ key, kid: jwk.kid }),
    { execute: [client.allowInsecureRequests] },
  )
  config[client.customFetch] = recordingFetch
  const as = config.serverMetadata()
  step('discovery', {
    require_pushed_authorization_requests: as.require_pushed_authorization_requests,
    dpop_signing_alg_values_supported: as.dpop_signing_alg_values_supported,
    token_endpoint_auth_methods_supported: as.token_endpoint_auth_methods_supported,
    code_challenge_methods_supported: as.code_challenge_methods_supported,
  })

  const signedIn = await fetch(new URL('/auth/signin', issuer), {
    method: 'POST',
    body: new URLSearchParams({ email: args.email, password: args.password }),
    redirect: 'manual',
  })
  const cookie = cookieFrom(signedIn, 'user')
  if (!cookie) throw new Error(`sign-in answered ${signedIn.status} without a user cookie`)

  // The DPoP key: extractable so that the refusals below can sign proofs by hand with it.
  const keyPair = await client.randomDPoPKeyPair('ES256', { extractable: true })
  const DPoP = client.getDPoPHandle(config, keyPair)
  const jkt = await calculateJwkThumbprint(await exportJWK(keyPair.publicKey))

  // The push, with a DPoP proof (RFC 9449 10.1): the server asks for its nonce first, openid-client retries.
  const codeVerifier = client.randomPKCECodeVerifier()
  const state = client.randomState()
  const nonce = client.randomNonce()
  let mark = exchanges.length
  const url = await client.buildAuthorizationUrlWithPAR(
    config,
    {
      redirect_uri: redirectUri,
      scope,
      code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    },
    { DPoP },
  )
  step('par', { query: [...url.searchParams.keys()].sort(), requests: since(mark), jkt })

  const authorized = await fetch(url, { redirect: 'manual', headers: { cookie: `user=${cookie}` } })
  const callback = new URL(authorized.headers.get('location') ?? '', url)
  if (!callback.href.startsWith(redirectUri)) throw new Error(`authorize answered ${authorized.status} ${callback.href}`)
  step('authorize', { status: authorized.status, iss: callback.searchParams.get('iss') })

  mark = exchanges.length
  const tokens = await client.authorizationCodeGrant(
    config,
    callback,
    { pkceCodeVerifier: codeVerifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true },
    undefined,
    { DPoP },
  )
  step('token', {
    token_type: tokens.token_type,
    refresh_token: Boolean(tokens.refresh_token),
    id_token_alg: JSON.parse(Buffer.from(tokens.id_token.split('.')[0], 'base64url')).alg,
    requests: since(mark),
  })

  mark = exchanges.length
  const claims = tokens.claims()
  const userinfo = await client.fetchUserInfo(config, tokens.access_token, claims.sub, { DPoP })
  step('userinfo', { sub: userinfo.sub, email: userinfo.email, requests: since(mark) })

  mark = exchanges.length
  const inspectUrl = new URL('/api/engine/v2/api_keys/inspect', issuer)
  const inspected = await client.fetchProtectedResource(config, tokens.access_token, inspectUrl, 'GET', null, undefined, {
    DPoP,
  })
  const inspectProof = exchanges.at(-1).proof
  step('inspect', { status: inspected.status, body: await inspected.json(), requests: since(mark) })

  // Two refreshes with the same key and the same refresh token: the profile does not rotate (5.3.2.1 item 9).
  mark = exchanges.length
  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token, undefined, { DPoP })
  const again = await client.refreshTokenGrant(config, tokens.refresh_token, undefined, { DPoP })
  step('refresh', {
    token_types: [refreshed.token_type, again.token_type],
    new_refresh_token: Boolean(refreshed.refresh_token || again.refresh_token),
    new_access_tokens: new Set([tokens.access_token, refreshed.access_token, again.access_token]).size,
    requests: since(mark),
  })
  const refreshedInfo = await client.fetchUserInfo(config, again.access_token, claims.sub, { DPoP })
  step('userinfo_after_refresh', { sub: refreshedInfo.sub })

  // The refusals. Bearer: the DPoP-bound token as a bearer token.
  const asBearer = await fetch(new URL('/auth/oauth/userinfo', issuer), {
    headers: { authorization: `Bearer ${again.access_token}` },
  })
  step('bearer_downgrade', { status: asBearer.status, body: await asBearer.json() })

  // A proof made for UserInfo, sent to inspect.
  const elsewhere = await fetch(inspectUrl, {
    headers: {
      authorization: `DPoP ${tokens.access_token}`,
      dpop: await proofFor(keyPair, 'GET', new URL('/auth/oauth/userinfo', issuer).href, tokens.access_token),
    },
  })
  step('proof_for_another_url', { status: elsewhere.status, body: await elsewhere.json() })

  // The proof openid-client sent to inspect, sent again.
  const replayed = await fetch(inspectUrl, {
    headers: { authorization: `DPoP ${tokens.access_token}`, dpop: inspectProof },
  })
  step('replayed_proof', { status: replayed.status, body: await replayed.json() })
  result.ok = true
} catch (error) {
  result.error = {
    name: error?.name,
    code: error?.code,
    message: error?.message,
    error: error?.error,
    error_description: error?.error_description,
  }
}
console.log(JSON.stringify(result, null, 2))
process.exit(result.ok ? 0 : 1)
