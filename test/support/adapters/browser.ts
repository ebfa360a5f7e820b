/**
 * A target adapter as a team would write one: every capability, with payment attempts made
 * by a browser on the hosted payment page (Chromium clicks the rail's button), and the
 * other controls through the sandbox API. Where the payer is sent on success is read from
 * the navigation the page starts (the merchant's address is not reached).
 */
import type { AdapterFactory, AttemptTarget, TargetAdapter } from '@payment-service/conformance';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../chromium.ts';
import { sandboxCalls } from './sandbox-calls.ts';
import { paced } from '../pace.ts';

const pagePath = (target: AttemptTarget) =>
  target.kind === 'checkout-session'
    ? `/pay/${encodeURIComponent(target.id)}`
    : target.kind === 'payment-link'
      ? `/pay/links/${encodeURIComponent(target.id)}`
      : `/pay/transactions/${encodeURIComponent(target.id)}`;

const createAdapter: AdapterFactory = ({ baseUrl }) => {
  const sandbox = sandboxCalls(baseUrl);
  let browser: Promise<Browser> | undefined;
  const launch = () => (browser ??= launchChromium());

  const adapter: TargetAdapter = {
    capabilities: [
      'createOrganisation',
      'createApiKey',
      'deleteApiKey',
      'rotateWebhookSecret',
      'advanceClock',
      'attempt',
      'webhookDeliveries',
      'injectFault',
    ],
    ...sandbox,
    async attempt(target, rail, outcome) {
      const context = await (await launch()).newContext();
      try {
        const page = await context.newPage();
        let redirectTo: string | null = null;
        await page.route('**/*', (route) => {
          const url = route.request().url();
          if (url.startsWith(baseUrl)) return route.continue();
          redirectTo = url;
          return route.abort();
        });
        await page.goto(`${baseUrl}${pagePath(target)}`);
        const button = page.locator(`form:has(input[name="rail"][value="${rail}"]) button[value="${outcome}"]`);
        if ((await button.count()) !== 1) throw new Error(`no ${rail} ${outcome} button on ${page.url()}`);
        await button.click({ noWaitAfter: true });
        // Done when the browser is sent away (success) or back to the page with the result.
        // The suite runs checks side by side, each with a browser context of its own: on a
        // busy machine an answer can take seconds, so wait as long as a check may take half.
        const deadline = Date.now() + paced(30_000);
        while (redirectTo === null && !page.url().includes('result=')) {
          if (Date.now() > deadline) throw new Error(`the page did not answer the ${outcome} attempt`);
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
        return { redirectTo };
      } finally {
        await context.close();
      }
    },
    async close() {
      await (await browser)?.close();
    },
  };
  return adapter;
};

export default createAdapter;
