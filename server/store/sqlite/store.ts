/**
 * The SQLite store: better-sqlite3 behind Kysely, WAL journal, migrations at start. What
 * it is built from, each in its own module: the lock that makes its process the file's
 * only writer (file-lock.ts), the integrity check at start (integrity.ts), prepared and
 * precompiled statements (statements.ts), group commit of creates (group-commit.ts), the
 * caches that writer may keep (caches.ts), and WAL upkeep (wal.ts).
 *
 * The connection has no busy timeout: a lock held by another process makes a write fail
 * at once (creates wait a little, off the event loop: group-commit.ts) instead of
 * blocking every request, and reads go on, as WAL readers never wait for a writer.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect, type Selectable, sql } from 'kysely';
import type { Background } from '../../background/thread.ts';
import { migrationProvider } from '../migrations.ts';
import {
  IDEMPOTENCY_COLUMNS,
  type IdempotencyKeysTable,
  idempotencyRow,
  PAYMENT_COLUMNS,
  type PaymentsTable,
  paymentRow,
  type Tables,
  toApiKey,
  toDelivery,
  toIdempotency,
  toOrganisation,
  toOutbox,
  toPayment,
} from '../schema.ts';
import type {
  ApiKey,
  DeliveryRecord,
  FaultKind,
  IdempotencyRecord,
  Mode,
  Organisation,
  OutboxEntry,
  Payment,
  PaymentUpdate,
  Store,
} from '../types.ts';
import { AccountCache, SessionCache } from './caches.ts';
import { lockFile } from './file-lock.ts';
import { GroupCommit } from './group-commit.ts';
import { checkIntegrity } from './integrity.ts';
import { compiled, withStatementCache } from './statements.ts';
import { keepWalShort } from './wal.ts';

/** Idempotency records deleted per statement by the clean-up, which yields between statements. */
export const CLEANUP_CHUNK = 1000;

export interface SqliteOptions {
  /** SQLite file path, or `:memory:`. */
  file: string;
  /** Runs the WAL checkpoints (and is told when to hold commits). */
  background: Background;
  /** WAL length (4 KiB frames) at which the background thread has the WAL rewound. */
  rewindFrames?: number;
}

interface Create {
  payment: Payment;
  idempotency: IdempotencyRecord | undefined;
}

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
    // Claims a key: inserts its record, or replaces one past its 24 hours (it may still be
    // on disk until the next clean-up). A live record is left as it is, and nothing changes.
    claimIdempotency: compiled(
      database,
      (...values: unknown[]) => {
        const row = Object.fromEntries(
          IDEMPOTENCY_COLUMNS.map((c, i) => [c, values[i]]),
        ) as never as IdempotencyKeysTable;
        return db
          .insertInto('idempotency_keys')
          .values(row)
          .onConflict((oc) =>
            oc
              .columns(['org_id', 'mode', 'key'])
              .doUpdateSet({
                kind: row.kind,
                fingerprint: row.fingerprint,
                status: row.status,
                body: row.body,
                created_at: row.created_at,
                expires_at: row.expires_at,
              })
              .where('idempotency_keys.expires_at', '<=', row.created_at),
          );
      },
      IDEMPOTENCY_COLUMNS.length,
    ),
  };
}

export class SqliteStore implements Store {
  readonly db: Kysely<Tables>;
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
    if (file) mkdirSync(path.dirname(file), { recursive: true });
    this.lock = file ? lockFile(file) : undefined;
    let database: Database.Database | undefined;
    try {
      database = new Database(file ?? ':memory:', { timeout: 0 });
      if (file) checkIntegrity(database, file);
      database.pragma('journal_mode = WAL');
      // WAL with synchronous=NORMAL survives a process crash (not a power loss) and keeps writes fast.
      database.pragma('synchronous = NORMAL');
      database.pragma('foreign_keys = ON');
    } catch (error) {
      database?.close();
      this.lock?.release();
      throw error;
    }
    this.database = database;
    this.file = file;
    this.db = new Kysely<Tables>({ dialect: new SqliteDialect({ database: withStatementCache(this.database) }) });
    this.creates = new GroupCommit(this.database, (create) => this.insertPayment(create));
  }

  async migrate(): Promise<void> {
    const { error } = await new Migrator({ db: this.db, provider: migrationProvider }).migrateToLatest();
    if (error) throw error;
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

  async writeProblem(): Promise<string | undefined> {
    try {
      // A write as a create makes one (a transaction that appends to the WAL), of one row.
      this.database
        .prepare(
          "insert into settings (key, value) values ('write_checked_at', ?) on conflict do update set value = excluded.value",
        )
        .run(String(Date.now()));
      return undefined;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }

  async getSetting(key: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('settings').select('value').where('key', '=', key).executeTakeFirst();
    return row?.value;
  }

  async putSetting(key: string, value: string): Promise<void> {
    await this.db
      .insertInto('settings')
      .values({ key, value })
      .onConflict((oc) => oc.column('key').doUpdateSet({ value }))
      .execute();
  }

  async createOrganisation(org: Organisation): Promise<void> {
    await this.db
      .insertInto('organisations')
      .values({
        id: org.id,
        name: org.name,
        settlement_currency: org.settlementCurrency,
        card_enabled: org.cardEnabled ? 1 : 0,
        open_banking_approved: org.openBankingApproved ? 1 : 0,
        settlement_account: org.settlementAccount ? 1 : 0,
        webhook_secret: org.webhookSecret,
        clock_offset_ms: org.clockOffsetMs,
        created_at: Date.now(),
      })
      .execute();
    this.accounts.organisations.set(org.id, { ...org });
  }

  async getOrganisation(id: string): Promise<Organisation | undefined> {
    const cached = this.accounts.organisations.get(id);
    if (cached) return cached;
    const row = await this.db.selectFrom('organisations').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) return undefined;
    const org = toOrganisation(row);
    this.accounts.organisations.set(id, org);
    return org;
  }

  async countOrganisations(): Promise<number> {
    const row = await this.db
      .selectFrom('organisations')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async setClockOffset(orgId: string, clockOffsetMs: number): Promise<void> {
    await this.db
      .updateTable('organisations')
      .set({ clock_offset_ms: clockOffsetMs })
      .where('id', '=', orgId)
      .execute();
    this.accounts.organisations.delete(orgId);
  }

  async setWebhookSecret(orgId: string, secret: string): Promise<void> {
    await this.db.updateTable('organisations').set({ webhook_secret: secret }).where('id', '=', orgId).execute();
    this.accounts.organisations.delete(orgId);
  }

  async createApiKey(key: ApiKey): Promise<void> {
    await this.db
      .insertInto('api_keys')
      .values({
        client_id: key.clientId,
        org_id: key.orgId,
        mode: key.mode,
        secret_hash: key.secretHash,
        created_at: Date.now(),
      })
      .execute();
    this.accounts.apiKeys.set(key.clientId, { ...key });
  }

  async getApiKey(clientId: string): Promise<ApiKey | undefined> {
    const cached = this.accounts.apiKeys.get(clientId);
    if (cached) return cached;
    const row = await this.db.selectFrom('api_keys').selectAll().where('client_id', '=', clientId).executeTakeFirst();
    if (!row) return undefined;
    const key = toApiKey(row);
    this.accounts.apiKeys.set(clientId, key);
    return key;
  }

  async deleteApiKey(clientId: string): Promise<boolean> {
    const result = await this.db.deleteFrom('api_keys').where('client_id', '=', clientId).executeTakeFirst();
    this.accounts.apiKeys.delete(clientId);
    return Number(result.numDeletedRows) > 0;
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
  private insertPayment({ payment, idempotency }: Create): IdempotencyRecord | undefined {
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

  async getPaymentBySessionId(orgId: string, sessionId: string): Promise<Readonly<Payment> | undefined> {
    const cached = this.sessions.get(orgId, sessionId);
    if (cached) return cached;
    const row = this.queries.paymentBySession.get(orgId, sessionId) as Selectable<PaymentsTable> | undefined;
    return row ? this.sessions.keep(toPayment(row)) : undefined;
  }

  async getPayment(orgId: string, transactionId: string): Promise<Payment | undefined> {
    const row = await this.db
      .selectFrom('payments')
      .selectAll()
      .where('transaction_id', '=', transactionId)
      .where('org_id', '=', orgId)
      .executeTakeFirst();
    return row ? toPayment(row) : undefined;
  }

  async countPayments(orgId: string): Promise<number> {
    const row = await this.db
      .selectFrom('payments')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('org_id', '=', orgId)
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async findPayment(by: { transactionId: string } | { sessionId: string }): Promise<Payment | undefined> {
    let query = this.db.selectFrom('payments').selectAll();
    query =
      'transactionId' in by
        ? query.where('transaction_id', '=', by.transactionId)
        : query.where('session_id', '=', by.sessionId);
    const row = await query.executeTakeFirst();
    return row ? toPayment(row) : undefined;
  }

  async updatePayment(
    transactionId: string,
    update: PaymentUpdate,
    webhook?: Omit<OutboxEntry, 'id' | 'attemptsMade' | 'state'>,
  ): Promise<OutboxEntry | undefined | false> {
    try {
      return await this.db.transaction().execute(async (trx) => {
        const result = await trx
          .updateTable('payments')
          .set({
            status: update.status,
            transaction_type: update.transactionType,
            updated_at: update.updatedAt,
            completed_at: update.completedAt,
          })
          .where('transaction_id', '=', transactionId)
          .where('status', '!=', 'completed')
          .executeTakeFirst();
        if (Number(result.numUpdatedRows) === 0) return false;
        if (!webhook) return undefined;
        const row = await trx
          .insertInto('webhook_outbox')
          .values({
            transaction_id: webhook.transactionId,
            org_id: webhook.orgId,
            mode: webhook.mode,
            rail: webhook.rail,
            url: webhook.url,
            body: webhook.body,
            legacy: webhook.legacy ? 1 : 0,
            attempts_made: 0,
            next_attempt_at: webhook.nextAttemptAt,
            state: 'pending',
          })
          .returningAll()
          .executeTakeFirstOrThrow();
        return toOutbox(row);
      });
    } finally {
      // After the commit: a read that ran before it (and kept the old row) is forgotten.
      this.sessions.forget(transactionId);
    }
  }

  async dueWebhooks(realNowMs: number, limit: number): Promise<OutboxEntry[]> {
    const rows = await this.db
      .selectFrom('webhook_outbox')
      .innerJoin('organisations', 'organisations.id', 'webhook_outbox.org_id')
      .selectAll('webhook_outbox')
      .where('webhook_outbox.state', '=', 'pending')
      .where(({ eb, ref }) =>
        eb(
          ref('webhook_outbox.next_attempt_at'),
          '<=',
          sql<number>`${realNowMs} + ${ref('organisations.clock_offset_ms')}`,
        ),
      )
      .orderBy('webhook_outbox.next_attempt_at')
      .limit(limit)
      .execute();
    return rows.map(toOutbox);
  }

  async getWebhook(id: number): Promise<OutboxEntry | undefined> {
    const row = await this.db.selectFrom('webhook_outbox').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toOutbox(row) : undefined;
  }

  async startDelivery(
    entry: OutboxEntry,
    attempt: Omit<DeliveryRecord, 'id' | 'responseStatus' | 'error' | 'final'>,
  ): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('webhook_outbox')
        .set({ attempts_made: attempt.attempt })
        .where('id', '=', entry.id)
        .execute();
      const row = await trx
        .insertInto('webhook_deliveries')
        .values({
          outbox_id: attempt.outboxId,
          transaction_id: attempt.transactionId,
          url: attempt.url,
          attempt: attempt.attempt,
          at: attempt.at,
          signed: attempt.signed ? 1 : 0,
          response_status: null,
          error: null,
          final: 0,
          done: 0,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      return row.id;
    });
  }

  async finishDelivery(
    deliveryId: number,
    result: { responseStatus: number | null; error: string | null; final: boolean },
    next: { state: OutboxEntry['state']; nextAttemptAt: number },
  ): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('webhook_deliveries')
        .set({ response_status: result.responseStatus, error: result.error, final: result.final ? 1 : 0, done: 1 })
        .where('id', '=', deliveryId)
        .returning('outbox_id')
        .executeTakeFirstOrThrow();
      await trx
        .updateTable('webhook_outbox')
        .set({ state: next.state, next_attempt_at: next.nextAttemptAt })
        .where('id', '=', row.outbox_id)
        .execute();
    });
  }

  async interruptedDeliveries(): Promise<DeliveryRecord[]> {
    const rows = await this.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('done', '=', 0)
      .orderBy('id')
      .execute();
    return rows.map(toDelivery);
  }

  async listDeliveries(transactionId: string): Promise<DeliveryRecord[]> {
    const rows = await this.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('transaction_id', '=', transactionId)
      .where('done', '=', 1)
      .orderBy('id')
      .execute();
    return rows.map(toDelivery);
  }

  async setFault(orgId: string, kind: FaultKind, times: number): Promise<void> {
    await this.db
      .insertInto('faults')
      .values({ org_id: orgId, kind, remaining: times })
      .onConflict((oc) => oc.columns(['org_id', 'kind']).doUpdateSet({ remaining: times }))
      .execute();
  }

  async takeFault(orgId: string, kind: FaultKind): Promise<boolean> {
    const result = await this.db
      .updateTable('faults')
      .set((eb) => ({ remaining: eb('remaining', '-', 1) }))
      .where('org_id', '=', orgId)
      .where('kind', '=', kind)
      .where('remaining', '>', 0)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  async organisationsWithFaults(): Promise<string[]> {
    const rows = await this.db.selectFrom('faults').select('org_id').distinct().where('remaining', '>', 0).execute();
    return rows.map((row) => row.org_id);
  }

  /**
   * Organisation by organisation (each on its own clock, organisations are never deleted),
   * as ranges of the (org_id, expires_at) index: the clean-up reads only what it deletes,
   * however many live records there are. It deletes in chunks, and lets the event loop
   * serve requests between them, so a large backlog never stalls the server.
   */
  async deleteExpired(realNowMs: number): Promise<{ idempotencyRecords: number }> {
    const organisations = await this.db.selectFrom('organisations').select(['id', 'clock_offset_ms']).execute();
    let deleted = 0;
    for (const org of organisations) {
      const expired = this.db
        .selectFrom('idempotency_keys')
        .select(sql<number>`rowid`.as('rowid'))
        .where('org_id', '=', org.id)
        .where('expires_at', '<=', realNowMs + org.clock_offset_ms)
        .limit(CLEANUP_CHUNK);
      for (;;) {
        const result = await this.db
          .deleteFrom('idempotency_keys')
          .where(sql<number>`rowid`, 'in', expired)
          .executeTakeFirst();
        deleted += Number(result.numDeletedRows);
        if (Number(result.numDeletedRows) < CLEANUP_CHUNK) break;
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    return { idempotencyRecords: deleted };
  }
}
