/**
 * GET /: what this server is and where its pages are (API reference, sandbox reference,
 * the TypeScript SDK's README, error codes, the contract's changelog, health). It names no
 * credential: those are printed at start, never served.
 */
import { escapeHtml, renderPage } from './theme.ts';

export function renderLandingPage(options: { publicUrl: string; sandbox: boolean }): string {
  const base = escapeHtml(options.publicUrl);
  const sandbox = options.sandbox
    ? `<p>The sandbox API under <code>${base}/sandbox/</code> creates organisations and API keys, moves an
      organisation's clock, pays or declines payments and injects faults; its bearer token was printed
      when the server started.</p>`
    : '<p>The sandbox API is off on this server.</p>';
  return renderPage({
    title: 'Payment Service reference server',
    sidebar: `
      <a class="home" href="/">Reference server</a>
      <ul>
        <li><a href="/docs/">API reference</a></li>
        <li><a href="/docs/sandbox/">Sandbox API reference</a></li>
        <li><a href="/docs/client/">TypeScript SDK</a></li>
        <li><a href="/docs/errors/">Error codes</a></li>
        <li><a href="/docs/changelog/">Changelog</a></li>
        <li><a href="/healthz">Health</a></li>
      </ul>`,
    main: `
      <h1>Payment Service reference server</h1>
      <p>This server answers the payment service's API under <code>${base}/api/</code>, as its
      description documents it: checkout sessions, payment links, the form-encoded token endpoint,
      idempotent creates, the error envelope, and signed webhooks with per-rail retries.</p>
      ${sandbox}
      <div class="card">
        <h2>Start here</h2>
        <p>Exchange an API key (the demo organisation's test key was printed when the server started) for a
      token, create a checkout session with it, and open the session's <code>url</code>:</p>
        <pre class="wrap"><code>CLIENT_ID=ck_test_...  CLIENT_SECRET=sk_...
TOKEN=$(curl -s -X POST ${base}/api/token \\
  -d "clientId=$CLIENT_ID&amp;clientSecret=$CLIENT_SECRET" | jq -r .accessToken)
curl -s -X POST ${base}/api/checkout-sessions \\
  -H "authorization: Bearer $TOKEN" -H 'content-type: application/json' \\
  -d '{"type":"single","amount":{"total":25},
       "creditorReference":{"reference":"ORDER-1"},
       "checkoutMethod":"both","redirectUrl":"https://shop.example/thanks"}'</code></pre>
        <p class="links">
          <a href="/docs/">API reference</a>
          <a href="/docs/sandbox/">Sandbox API reference</a>
          <a href="/docs/client/">TypeScript SDK</a>
          <a href="/docs/errors/">Error codes</a>
          <a href="/docs/changelog/">Changelog</a>
          <a href="/healthz">Health</a>
        </p>
      </div>`,
  });
}
