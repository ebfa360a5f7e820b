/**
 * The PostgreSQL store: node-postgres's pool behind Kysely, the shared queries of
 * SqlStore. Any number of servers may share one database, so nothing is kept in memory
 * (`exclusive` is false: every read asks the database), a create's idempotency key is
 * claimed by a unique constraint in the create's own transaction, and due webhooks are
 * claimed with `FOR UPDATE SKIP LOCKED`.
 *
 * What it adds, as every dialect's folder has it: the pool, and the round trips one turn
 * of the event loop shares (connection.ts); the creates of a turn in one transaction
 * (commits.ts); the reads every request makes, batched per turn (reads.ts); and here, the
 * class that ties them together.
 */
import { Kysely, PostgresDialect } from 'kysely';
import type { Tables } from '../schema.ts';
import { SqlStore } from '../sql-store.ts';
import type { FaultKind, IdempotencyRecord, Payment } from '../types.ts';
import { createsPerTurn } from './commits.ts';
import { openPool } from './connection.ts';
import { type Account, accountsPerTurn, armedPerTurn, sessionsPerTurn } from './reads.ts';

export class PostgresStore extends SqlStore {
  readonly exclusive = false;

  private readonly accounts = accountsPerTurn(this.db);
  private readonly sessions = sessionsPerTurn(this.db);
  /** Organisations with some armed fault, asked per turn: most creates then make no write for it. */
  private readonly armed = armedPerTurn(this.db);
  private readonly creates = createsPerTurn(this.db, (trx, c) => this.insertPayment(trx, c.payment, c.idempotency));

  /** `onConnectionError`: a connection broke (the database restarted, say); its queries fail on their own. */
  constructor(url: string, onConnectionError: (error: Error) => void) {
    super(new Kysely<Tables>({ dialect: new PostgresDialect({ pool: openPool(url, onConnectionError) }) }), 'postgres');
  }

  async close(): Promise<void> {
    await this.db.destroy();
  }

  override async getAccount(clientId: string): Promise<Account | undefined> {
    return clientId.includes('\0') ? undefined : this.accounts.load(clientId);
  }

  override async getPaymentBySessionId(orgId: string, sessionId: string): Promise<Readonly<Payment> | undefined> {
    return sessionId.includes('\0') ? undefined : this.sessions.load({ orgId, sessionId });
  }

  override async takeFault(orgId: string, kind: FaultKind): Promise<boolean> {
    return (await this.armed.load(orgId)) && super.takeFault(orgId, kind);
  }

  createPayment(payment: Payment, idempotency?: IdempotencyRecord): Promise<IdempotencyRecord | undefined> {
    return this.creates.load({ payment, idempotency });
  }

  /** Each due webhook goes to one claimer: rows another server is claiming are skipped, not waited for. */
  protected override lockForClaim(query: Parameters<SqlStore['lockForClaim']>[0]) {
    return query.forUpdate('webhook_outbox').skipLocked();
  }
}
