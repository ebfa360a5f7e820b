/**
 * A check's view of the suite's webhook receiver: paths of its own, each answering as the
 * check says, and waits that end as soon as what is awaited arrives.
 */
import type { Exchange } from '../../../core/exchange.ts';
import { at, list } from '../../../core/json.ts';
import { CheckSkipped } from '../../../core/outcome.ts';
import type { Behaviour } from '../capture-receiver.ts';
import type { Received } from '../../../core/exchange.ts';
import type { RunContext } from './run-context.ts';

export interface Hook {
  path: string;
  url: string;
}

/**
 * The document requires webhookUrl to be HTTPS and publicly reachable, so a target may
 * refuse the suite's receiver address (400 validation_failed naming webhookUrl): a plain
 * http one, or an https one on a host that is not public. The check cannot run then, and
 * the reason says how to make it run.
 */
export function skipWhenReceiverRefused(run: RunContext, exchange: Exchange, webhookUrl: unknown): void {
  const publicUrl = run.receiver.publicUrl;
  if (typeof webhookUrl !== 'string' || !webhookUrl.startsWith(publicUrl)) return;
  const named =
    at(exchange.json, 'error', 'param') === 'webhookUrl' ||
    list(exchange.json, 'error', 'details').some((d) => at(d, 'field') === 'webhookUrl');
  if (exchange.status !== 400 || at(exchange.json, 'error', 'code') !== 'validation_failed' || !named) return;
  throw new CheckSkipped(
    webhookUrl.startsWith('https://')
      ? `the target refused the suite's receiver address ${publicUrl} as webhookUrl (the document requires a publicly reachable address): pass --receiver-public-url https://... (a public HTTPS tunnel to the receiver), or let the target's test deployment accept the receiver's host`
      : `the target refused the suite's receiver address ${publicUrl} as webhookUrl (the document requires HTTPS and a publicly reachable address): pass --receiver-tls (and have the target trust its CA), or --receiver-public-url https://... (an HTTPS tunnel to the receiver)`,
  );
}

export class Hooks {
  constructor(
    private readonly run: RunContext,
    private readonly checkId: string,
    private readonly signal: AbortSignal,
  ) {}

  /** A receiver path of the check's own, answering as told (default 200). */
  hook(label: string, behaviour?: Behaviour): Hook {
    const path = this.run.nextHookPath(this.checkId, label);
    if (behaviour) this.run.receiver.behave(path, behaviour);
    return { path, url: `${this.run.receiver.publicUrl}${path}` };
  }

  /** The deliveries to the hook once there are `count`, or what arrived by the deadline (default --settle-timeout). */
  waitFor(hook: Hook, count: number, timeoutMs = this.run.settings.settleTimeoutMs): Promise<Received[]> {
    return this.run.receiver.waitFor(hook.path, count, timeoutMs, this.signal);
  }

  received(hook: Hook): Received[] {
    return this.run.receiver.received(hook.path);
  }

  /** What arrived at the hook of event kinds other than checkout_session.completed. */
  receivedOther(hook: Hook): Received[] {
    return this.run.receiver.receivedOther(hook.path);
  }

  /** Waits long enough to be sure nothing (more) is coming; stops when the check is abandoned. */
  settle(ms = this.run.settings.deliveryWaitMs): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.signal.aborted) {
        reject(this.signal.reason);
        return;
      }
      const onAbort = () => {
        clearTimeout(timer);
        reject(this.signal.reason);
      };
      const timer = setTimeout(() => {
        this.signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      this.signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  skipWhenRefused(exchange: Exchange, webhookUrl: unknown): void {
    skipWhenReceiverRefused(this.run, exchange, webhookUrl);
  }
}
