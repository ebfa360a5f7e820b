/**
 * The SQLite store: better-sqlite3 behind Kysely, WAL journal, the shared queries of
 * SqlStore. What it adds, as every dialect's folder has it: the file made private, locked
 * so that its process is the file's only user, checked at start, and its statements
 * prepared once (connection.ts); group commit of creates and the WAL's upkeep
 * (commits.ts); the copies that only user may keep (reads.ts); and here, the precompiled
 * per-request queries and the class that ties them together.
 */
import path from 'node:path';
import type Database from 'better-sqlite3';
import { Kysely, type Selectable, SqliteDialect } from 'kysely';
import {
  IDEMPOTENCY_COLUMNS,
  type IdempotencyKeysTable,
  idempotencyRow,
  PAYMENT_COLUMNS,
  type PaymentsTable,
  paymentRow,
  type Tables,
  toIdempotency,
  toPayment,
} from '../schema.ts';
import { replaceExpiredKey, SqlStore } from '../sql-store.ts';
import type {
  ApiKey,
  IdempotencyRecord,
  Lease,
  Mode,
  NewWebhook,
  Organisation,
  OutboxEntry,
  Payment,
  PaymentUpdate,
} from '../types.ts';
import { type Checkpointer, type Create, GroupCommit, keepWalShort } from './commits.ts';
import { compiled, openDatabase, withStatementCache } from './connection.ts';
import { AccountCache, SessionCache } from './reads.ts';

export { CLEANUP_CHUNK } from '../sql-store.ts';

export interface SqliteOptions {
  /** SQLite file path, or `:memory:`. */
  file: string;
  /** Runs the WAL checkpoints (and is told when to hold commits): the background thread. */
  background: Checkpointer;
  /** WAL length (4 KiB frames) at which the background thread has the WAL rewound. */
  rewindFrames?: number;
  /** Make the file's folder when missing (the default `.data/`); otherwise a missing folder is an error. */
  makeFolder?: boolean;
}

/**
 * The per-request queries, compiled once (connection.ts, `compiled`): the polled session's
 * read, and a create's key claim and insert, which run in the group commit.
 */
function compileQueries(database: Database.Database, db: Kysely<Tables>) {
  return {
    paymentBySession: compiled(
      database,
      (orgId: string, sessionId: string) =>
        db.selectFrom('payments').selectAll().where('session_id', '=', sessionId).where('org_id', '=', orgId),
      2,
    ),
    idempotency: compiled(
      database,
      (orgId: string, mode: string, key: string) =>
        db
          .selectFrom('idempotency_keys')
          .selectAll()
          .where('org_id', '=', orgId)
          .where('mode', '=', mode as Mode)
          .where('key', '=', key),
      3,
    ),
    // Inserts take one argument per column, in the order of the column lists (schema.ts).
    insertPayment: compiled(
      database,
      (...values: unknown[]) =>
        db.insertInto('payments').values(Object.fromEntries(PAYMENT_COLUMNS.map((c, i) => [c, values[i]])) as never),
      PAYMENT_COLUMNS.length,
    ),
    // Claims a key: inserts its record, or replaces one past its 24 hours (replaceExpiredKey).
    claimIdempotency: compiled(
      database,
      (...values: unknown[]) => {
        const row = Object.fromEntries(
          IDEMPOTENCY_COLUMNS.map((c, i) => [c, values[i]]),
        ) as never as IdempotencyKeysTable;
        return db.insertInto('idempotency_keys').values(row).onConflict(replaceExpiredKey);
      },
      IDEMPOTENCY_COLUMNS.length,
    ),
  };
}

export class SqliteStore extends SqlStore {
  /** One server per file (lockFile, connection.ts): its copies in memory stay exact. */
  readonly exclusive = true;
  private readonly database: Database.Database;
  private readonly file: string | undefined;
  private readonly lock: { release(): void } | undefined;
  private readonly accounts = new AccountCache();
  private readonly sessions = new SessionCache();
  private readonly creates: GroupCommit<Create, IdempotencyRecord | undefined>;
  /** Compiled in migrate(), once the tables exist. */
  private queries!: ReturnType<typeof compileQueries>;
  private stopWalUpkeep: (() => Promise<void>) | undefined;

  constructor(private readonly options: SqliteOptions) {
    const file = options.file === ':memory:' ? undefined : path.resolve(options.file);
    const { database, lock } = openDatabase(file, options.makeFolder ?? false);
    super(new Kysely<Tables>({ dialect: new SqliteDialect({ database: withStatementCache(database) }) }), 'sqlite');
    this.database = database;
    this.file = file;
    this.lock = lock;
    this.creates = new GroupCommit(this.database, (create) => this.insertCreate(create));
  }

  override async migrate(): Promise<void> {
    await super.migrate();
    this.queries = compileQueries(this.database, this.db);
    if (this.file)
      this.stopWalUpkeep = await keepWalShort(
        this.database,
        this.file,
        this.options.background,
        this.creates,
        this.options.rewindFrames,
      );
  }

  async close(): Promise<void> {
    // The background connection closes first: the last connection to close checkpoints
    // the WAL into the database file and removes it.
    await this.stopWalUpkeep?.();
    await this.db.destroy();
    this.lock?.release();
  }

  override async createOrganisation(org: Organisation): Promise<void> {
    await super.createOrganisation(org);
    this.accounts.organisations.set(org.id, { ...org });
  }

  override async getOrganisation(id: string): Promise<Organisation | undefined> {
    const cached = this.accounts.organisations.get(id);
    if (cached) return cached;
    const org = await super.getOrganisation(id);
    if (org) this.accounts.organisations.set(id, org);
    return org;
  }

  override async setClockOffset(orgId: string, clockOffsetMs: number): Promise<void> {
    await super.setClockOffset(orgId, clockOffsetMs);
    this.accounts.organisations.delete(orgId);
  }

  override async setWebhookSecret(orgId: string, secret: string): Promise<void> {
    await super.setWebhookSecret(orgId, secret);
    this.accounts.organisations.delete(orgId);
  }

  override async createApiKey(key: ApiKey): Promise<void> {
    await super.createApiKey(key);
    this.accounts.apiKeys.set(key.clientId, { ...key });
  }

  override async getApiKey(clientId: string): Promise<ApiKey | undefined> {
    const cached = this.accounts.apiKeys.get(clientId);
    if (cached) return cached;
    const key = await super.getApiKey(clientId);
    if (key) this.accounts.apiKeys.set(clientId, key);
    return key;
  }

  override async getAccount(clientId: string): Promise<{ apiKey: ApiKey; org: Organisation } | undefined> {
    const apiKey = await this.getApiKey(clientId);
    const org = apiKey && (await this.getOrganisation(apiKey.orgId));
    return apiKey && org ? { apiKey, org } : undefined;
  }

  override async deleteApiKey(clientId: string): Promise<boolean> {
    try {
      return await super.deleteApiKey(clientId);
    } finally {
      this.accounts.apiKeys.delete(clientId);
    }
  }

  /**
   * Through the group commit. The idempotency key is claimed in the group's transaction:
   * on its own, a read costs a WAL read transaction of its own; inside the group's,
   * claiming it is part of storing its record.
   */
  createPayment(payment: Payment, idempotency?: IdempotencyRecord): Promise<IdempotencyRecord | undefined> {
    return this.creates.submit({ payment, idempotency });
  }

  /**
   * The key is claimed first, in the statement that stores its record: a create (the
   * common case) then costs no lookup of its own, and only a key held by a live record is
   * read back, with nothing written.
   */
  private insertCreate({ payment, idempotency }: Create): IdempotencyRecord | undefined {
    if (idempotency) {
      const record = idempotencyRow(idempotency);
      if (this.queries.claimIdempotency.run(...IDEMPOTENCY_COLUMNS.map((c) => record[c])).changes === 0) {
        const row = this.queries.idempotency.get(idempotency.orgId, idempotency.mode, idempotency.key);
        return toIdempotency(row as Selectable<IdempotencyKeysTable>);
      }
    }
    const row = paymentRow(payment);
    this.queries.insertPayment.run(...PAYMENT_COLUMNS.map((c) => row[c]));
    return undefined;
  }

  override async getPaymentBySessionId(orgId: string, sessionId: string): Promise<Readonly<Payment> | undefined> {
    const cached = this.sessions.get(orgId, sessionId);
    if (cached) return cached;
    const row = this.queries.paymentBySession.get(orgId, sessionId) as Selectable<PaymentsTable> | undefined;
    return row ? this.sessions.keep(toPayment(row)) : undefined;
  }

  override async updatePayment(
    transactionId: string,
    update: PaymentUpdate,
    webhook?: { entry: NewWebhook; lease: Lease },
  ): Promise<OutboxEntry | undefined | false> {
    try {
      return await super.updatePayment(transactionId, update, webhook);
    } finally {
      // After the commit: a read that ran before it (and kept the old row) is forgotten.
      this.sessions.forget(transactionId);
    }
  }
}
