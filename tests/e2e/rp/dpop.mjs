#!/usr/bin/env node
// DPoP harness (RFC 9449): panva's openid-client (v6) as a public client that binds its tokens to a key.
// Discovery (dpop_signing_alg_values_supported), sign-in, code + PKCE with dpop_jkt, the token request with a
// DPoP proof (the server's use_dpop_nonce answered by openid-client's own retry), UserInfo and inspect with
// DPoP, a refresh with the same key; then the refusals: the token as Bearer, a proof for another URL, a
// replayed proof, a refresh with another key. Prints one JSON object; exit code 0 when every step passed.
//
// node dpop.mjs --issuer URL --client-id ID --redirect-uri URI --email E --password P [--scope S]
import { calculateJwkThumbprint, exportJWK } from 'jose'
import * as client from 'openid-client'

import { cookieFrom, harnessArgs, proofFor, recorder, report } from './harness.mjs'

const args = harnessArgs()
const issuer = args.issuer
const redirectUri = args['redirect-uri']
const scope = args.scope ?? 'openid profile email'
const { result, step } = report()

// Every request openid-client makes, with its status and the DPoP headers: what the server asked and answered.
const { exchanges, recordingFetch } = recorder()
const since = (mark) => exchanges.slice(mark).map(({ path, status, authorization }) => ({ path, status, authorization }))

try {
  const config = await client.discovery(new URL(issuer), args['client-id'], {}, client.None(), {
    execute: [client.allowInsecureRequests],
  })
  config[client.customFetch] = recordingFetch
  const as = config.serverMetadata()
  step('discovery', { dpop_signing_alg_values_supported: as.dpop_signing_alg_values_supported })

  const signedIn = await fetch(new URL('/auth/signin', issuer), {
    method: 'POST',
    body: new URLSearchParams({ email: args.email, password: args.password }),
    redirect: 'manual',
  })
  const cookie = cookieFrom(signedIn, 'user')
  if (!cookie) throw new Error(`sign-in answered ${signedIn.status} without a user cookie`)

  // The key: extractable so that the refusals below can sign proofs by hand with it.
  const keyPair = await client.randomDPoPKeyPair('ES256', { extractable: true })
  const DPoP = client.getDPoPHandle(config, keyPair)
  const jkt = await calculateJwkThumbprint(await exportJWK(keyPair.publicKey))

  const codeVerifier = client.randomPKCECodeVerifier()
  const state = client.randomState()
  const nonce = client.randomNonce()
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope,
    code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
    nonce,
    dpop_jkt: jkt,
  })
  const authorized = await fetch(url, { redirect: 'manual', headers: { cookie: `user=${cookie}` } })
  const callback = new URL(authorized.headers.get('location') ?? '', url)
  if (!callback.href.startsWith(redirectUri)) throw new Error(`authorize answered ${authorized.status} ${callback.href}`)
  step('authorize', { dpop_jkt: jkt })

  let mark = exchanges.length
  const tokens = await client.authorizationCodeGrant(
    config,
    callback,
    { pkceCodeVerifier: codeVerifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true },
    undefined,
    { DPoP },
  )
  step('token', { token_type: tokens.token_type, requests: since(mark), jkt })

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

  mark = exchanges.length
  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token, undefined, { DPoP })
  step('refresh', { token_type: refreshed.token_type, requests: since(mark) })

  // The refusals. Bearer: the DPoP-bound token as a bearer token.
  const asBearer = await fetch(new URL('/auth/oauth/userinfo', issuer), {
    headers: { authorization: `Bearer ${refreshed.access_token}` },
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

  // A public client's refresh token, refreshed with another key: invalid_grant.
  const otherKey = await client.randomDPoPKeyPair('ES256')
  try {
    await client.refreshTokenGrant(config, refreshed.refresh_token, undefined, {
      DPoP: client.getDPoPHandle(config, otherKey),
    })
    throw new Error('a refresh with another key was accepted')
  } catch (error) {
    if (!(error instanceof client.ResponseBodyError)) throw error
    step('refresh_with_another_key', { error: error.error, error_description: error.error_description })
  }
  result.ok = true
} catch (error) {
  result.error = { name: error?.name, code: error?.code, message: error?.message, cause: error?.cause }
}
console.log(JSON.stringify(result, null, 2))
process.exit(result.ok ? 0 : 1)
