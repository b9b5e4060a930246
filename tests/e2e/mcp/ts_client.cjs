// The official MCP TypeScript SDK's client (@modelcontextprotocol/sdk) against an MCP server that this
// service protects: Client + StreamableHTTPClientTransport + an OAuthClientProvider, as the SDK's
// examples/client/simpleOAuthClient does. The SDK discovers the service from the MCP server's RFC 9728
// metadata, names itself by its Client ID Metadata Document (clientMetadataUrl, where the service reads
// documents) or registers (RFC 7591), and runs the code flow with PKCE and `resource`. The browser step
// is this script: signed in by the person's password, it opens the authorisation URL, approves the consent
// page and hands the code from the callback's Location to the transport (finishAuth).
//
// Run by tests/e2e/test_mcp_sdk_e2e.py with NODE_PATH at the tests' Node peers (devtools/npm_peers.py):
//   node ts_client.cjs '{"mcpUrl": ..., "serviceUrl": ..., "email": ..., "password": ..., "callback": ...,
//                        "clientMetadataUrl": ... or null}'
// Prints one JSON object: the tool's answer, the client and tokens the SDK kept, what its authorisation
// requests carried, and the consent pages it was shown.
'use strict';

const crypto = require('node:crypto');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { UnauthorizedError } = require('@modelcontextprotocol/sdk/client/auth.js');

const options = JSON.parse(process.argv[2]);

/** The person's browser: a cookie jar over fetch, signed in; it approves consent pages. */
class Browser {
  constructor() {
    this.cookies = new Map();
    this.consentPages = [];
  }

  async request(url, init = {}) {
    const headers = { ...(init.headers || {}) };
    if (this.cookies.size) {
      headers.Cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    }
    const answer = await fetch(url, { ...init, headers, redirect: 'manual' });
    for (const line of answer.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair.indexOf('=');
      this.cookies.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
    }
    return answer;
  }

  async signIn() {
    const query = new URLSearchParams({ email: options.email, password: options.password });
    const answer = await this.request(`${options.serviceUrl}/auth/signin?${query}`, { method: 'POST' });
    if (answer.status !== 202) throw new Error(`sign-in answered ${answer.status}: ${await answer.text()}`);
  }

  /** Open the authorisation URL, approve a consent page if one is shown: the callback URL it redirects to. */
  async authorize(url) {
    let answer = await this.request(url);
    if (answer.status === 200) {
      const page = await answer.text();
      this.consentPages.push(page);
      const token = page.match(/name="csrf_token" type="hidden" value="([^"]+)"/);
      if (!token) throw new Error(`no CSRF token on the consent page: ${page.slice(0, 500)}`);
      answer = await this.request(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf_token: token[1], approve: '1' }).toString(),
      });
    }
    if (answer.status !== 302 && answer.status !== 303) {
      throw new Error(`the authorisation answered ${answer.status}: ${await answer.text()}`);
    }
    return new URL(answer.headers.get('Location'));
  }
}

/** The SDK's OAuthClientProvider, in memory; its redirect is the browser above. */
class Provider {
  constructor(browser) {
    this.browser = browser;
    this.clientMetadataUrl = options.clientMetadataUrl || undefined;
    this.redirectUrl = options.callback;
    this.clientMetadata = {
      client_name: 'TS SDK client',
      redirect_uris: [options.callback],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
    this.authorizationRequests = [];
    this.code = undefined;
    this._state = crypto.randomBytes(16).toString('hex');
  }

  state() {
    return this._state;
  }

  clientInformation() {
    return this._client;
  }

  saveClientInformation(information) {
    this._client = information;
  }

  tokens() {
    return this._tokens;
  }

  saveTokens(tokens) {
    this._tokens = tokens;
  }

  saveCodeVerifier(verifier) {
    this._verifier = verifier;
  }

  codeVerifier() {
    if (!this._verifier) throw new Error('No code verifier saved');
    return this._verifier;
  }

  async redirectToAuthorization(url) {
    this.authorizationRequests.push(Object.fromEntries(url.searchParams));
    const callback = await this.browser.authorize(url.toString());
    if (callback.searchParams.get('state') !== this._state) {
      throw new Error(`the callback's state is not the request's: ${callback}`);
    }
    if (!callback.searchParams.get('code')) throw new Error(`no code in the callback: ${callback}`);
    this.code = callback.searchParams.get('code');
  }
}

async function connect(client, provider) {
  const transport = new StreamableHTTPClientTransport(new URL(options.mcpUrl), { authProvider: provider });
  try {
    await client.connect(transport);
  } catch (error) {
    if (!(error instanceof UnauthorizedError) || provider.code === undefined) throw error;
    await transport.finishAuth(provider.code);
    provider.code = undefined;
    await client.connect(new StreamableHTTPClientTransport(new URL(options.mcpUrl), { authProvider: provider }));
  }
}

async function main() {
  const browser = new Browser();
  await browser.signIn();
  const provider = new Provider(browser);
  const client = new Client({ name: 'authsvc-e2e', version: '1.0.0' }, { capabilities: {} });
  await connect(client, provider);
  const result = await client.callTool({ name: 'whoami', arguments: {} });
  await client.close();
  process.stdout.write(
    JSON.stringify({
      answer: result.content[0].text,
      client: provider.clientInformation(),
      tokens: provider.tokens(),
      authorizationRequests: provider.authorizationRequests,
      consentPages: browser.consentPages,
    }),
  );
}

main().catch((error) => {
  process.stderr.write(`${error && error.stack ? error.stack : error}\n`);
  process.exit(1);
});
