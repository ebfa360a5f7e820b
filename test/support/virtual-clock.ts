/**
 * A clock for the server's wait for a webhook answer that moves only when the test moves
 * it: the five-second rule seen to the millisecond, without five real seconds per attempt.
 * (The organisation clock of the sandbox API is the other virtual clock: it moves the
 * document's minutes and days.)
 */
import type { AnswerClock } from '../../server/webhooks/send.ts';

export class VirtualClock {
  private now = 0;
  private readonly pending = new Set<{ at: number; expired: () => void }>();

  /** For `webhookAnswerClock`. */
  readonly start: AnswerClock = (ms, expired) => {
    const wait = { at: this.now + ms, expired };
    this.pending.add(wait);
    return () => this.pending.delete(wait);
  };

  /** Waits started and not yet over (answered or expired). */
  get waiting(): number {
    return this.pending.size;
  }

  /** Moves the clock, ending every wait that is then over, the earliest first. */
  advance(ms: number): void {
    this.now += ms;
    const over = [...this.pending].filter((w) => w.at <= this.now).sort((a, b) => a.at - b.at);
    for (const wait of over) {
      this.pending.delete(wait);
      wait.expired();
    }
  }
}
