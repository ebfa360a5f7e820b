/**
 * Verifies an implementation of the payment service against the Pact contracts the
 * client's consumer tests wrote (`contracts/*.json`).
 *
 * Provider states are set up through the sandbox API (docs/interfaces.md), so any implementation
 * that offers it can be verified:
 *
 *   npm run pact:verify -- --base-url http://127.0.0.1:4010 --sandbox-token sbx_...
 *
 * The contracts hold example credentials and tokens. Before each interaction reaches the
 * provider, a request filter swaps them for the ones the provider state created: the
 * token request's form body gets the state's key pair, and the bearer token becomes the
 * state's token (an expired one for "the access token has expired").
 */
import { readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Verifier } from '@pact-foundation/pact';
import { Command } from 'commander';
import { sandboxAdapter } from '@payment-service/conformance';

// Pact's libraries report usage unless told not to; verification stays on this machine.
process.env.PACT_DO_NOT_TRACK ??= 'true';

export const CONTRACTS_DIR = resolve(import.meta.dirname, '..', 'contracts');

export interface VerifyContractsOptions {
  baseUrl: string;
  sandboxToken: string;
  pactUrls?: string[];
  logLevel?: 'trace' | 'debug' | 'info' | 'warn' | 'error';
}

interface StateContext {
  clientId: string;
  clientSecret: string;
  token: string;
}

/** The sandbox calls (the suite's typed sandbox client) and API calls the provider states need. */
function providerSetup(baseUrl: string, sandboxToken: string) {
  const sandbox = sandboxAdapter({ baseUrl, token: sandboxToken });

  async function call<T>(
    method: string,
    path: string,
    token: string,
    body?: unknown,
    form?: Record<string, string>,
  ): Promise<T> {
    // The token request is form-encoded and unauthenticated; everything else is JSON with a bearer token.
    const headers: Record<string, string> = form
      ? { 'content-type': 'application/x-www-form-urlencoded' }
      : { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) };
    const payload = form ? new URLSearchParams(form).toString() : body === undefined ? undefined : JSON.stringify(body);
    const response = await fetch(`${baseUrl}${path}`, { method, headers, body: payload });
    const text = await response.text();
    if (!response.ok) throw new Error(`provider state setup: ${method} ${path} answered ${response.status}: ${text}`);
    return JSON.parse(text) as T;
  }

  /** A new organisation with both rails, NZD settlement, and a test-mode token. */
  async function organisation(): Promise<StateContext & { orgId: string }> {
    const org = await sandbox.createOrganisation!({
      settlementCurrency: 'NZD',
      cardEnabled: true,
      openBankingApproved: true,
      settlementAccount: true,
    });
    const { clientId, clientSecret } = org.apiKeys.test;
    const { accessToken } = await call<{ accessToken: string }>('POST', '/api/token', '', undefined, {
      clientId,
      clientSecret,
    });
    return { orgId: org.id, clientId, clientSecret, token: accessToken };
  }

  const payment = (kind: 'checkout-sessions' | 'payment-links', token: string) =>
    call<{ id: string }>('POST', `/api/${kind}`, token, {
      ...(kind === 'checkout-sessions' ? { type: 'single' } : {}),
      amount: { total: 25.5 },
      creditorReference: { reference: 'INV-1001' },
      redirectUrl: 'https://shop.example.com/done',
      checkoutMethod: 'both',
    });

  return { sandbox, organisation, payment };
}

export async function verifyContracts(options: VerifyContractsOptions): Promise<string> {
  const setup = providerSetup(options.baseUrl, options.sandboxToken);
  let context: StateContext | undefined;

  const stateHandlers = {
    'an organisation with card and open banking enabled': async () => {
      context = await setup.organisation();
      return {};
    },
    'a checkout session exists': async () => {
      context = await setup.organisation();
      return { sessionId: (await setup.payment('checkout-sessions', context.token)).id };
    },
    'a payment link exists': async () => {
      context = await setup.organisation();
      return { linkId: (await setup.payment('payment-links', context.token)).id };
    },
    'the access token has expired': async () => {
      const org = await setup.organisation();
      context = org;
      const sessionId = (await setup.payment('checkout-sessions', org.token)).id;
      await setup.sandbox.advanceClock!(org.orgId, 5 * 60 + 1);
      return { sessionId };
    },
  };

  // Fail fast, and clearly, when the target or its sandbox API cannot set up a state.
  await setup.organisation().catch((error: Error) => {
    throw new Error(`Cannot set up provider states at ${options.baseUrl}: ${error.message}`);
  });

  const pactUrls =
    options.pactUrls ??
    readdirSync(CONTRACTS_DIR)
      .filter((f) => f.endsWith('.json'))
      .map((f) => join(CONTRACTS_DIR, f));
  return new Verifier({
    provider: 'payment-service',
    providerBaseUrl: options.baseUrl,
    pactUrls,
    stateHandlers,
    logLevel: options.logLevel ?? 'warn',
    // Swap the contract's example credentials for the provider state's real ones.
    requestFilter: (req: any, _res: any, next: () => void) => {
      if (context && req.path === '/api/token' && req.method === 'POST') {
        const form = Buffer.from(
          new URLSearchParams({ clientId: context.clientId, clientSecret: context.clientSecret }).toString(),
        );
        req.body = form;
        req.headers['content-length'] = String(form.length);
      } else if (context && typeof req.headers.authorization === 'string') {
        req.headers.authorization = `Bearer ${context.token}`;
      }
      next();
    },
  }).verifyProvider();
}

/** The verifier rejects with its whole JSON result; the interactions that failed are the news. */
function summarise(message: string): string {
  try {
    const result = JSON.parse(message) as { interactionResults?: { description: string; result: string }[] };
    const failed = (result.interactionResults ?? [])
      .filter((r) => r.result !== 'Ok')
      .map((r) => `  - ${r.description}`);
    return `${failed.length} interaction(s) failed (details above):\n${failed.join('\n')}`;
  } catch {
    return message;
  }
}

async function main() {
  const program = new Command('verify-contracts')
    .description('Verify an implementation of the payment service against the Pact contracts in contracts/.')
    .requiredOption('--base-url <url>', 'the implementation under test')
    .requiredOption(
      '--sandbox-token <token>',
      'bearer token of its sandbox API (provider states are set up through it)',
    )
    .option('--pact <file...>', 'contract files (default: every contracts/*.json)')
    .option('--log-level <level>', 'trace, debug, info, warn or error', 'warn')
    .parse();
  const opts = program.opts<{
    baseUrl: string;
    sandboxToken: string;
    pact?: string[];
    logLevel: VerifyContractsOptions['logLevel'];
  }>();
  try {
    await verifyContracts({
      baseUrl: opts.baseUrl.replace(/\/+$/, ''),
      sandboxToken: opts.sandboxToken,
      pactUrls: opts.pact?.map((p) => resolve(p)),
      logLevel: opts.logLevel,
    });
    console.log('Every interaction in the contracts was verified.');
  } catch (error) {
    console.error(`Contract verification failed: ${summarise((error as Error).message)}`);
    process.exitCode = 1;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
