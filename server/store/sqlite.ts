/**
 * The SQLite store: better-sqlite3 behind Kysely, WAL journal, migrations at start.
 * Organisations and API keys are read on every authenticated request, so they are cached
 * in memory; this process is the database's only writer, so the cache stays exact.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect, sql, type Generated, type Selectable } from 'kysely';
import { checkpointInBackground } from '../background.ts';
import { migrationProvider } from './migrations.ts';
import type {
  ApiKey,
  DeliveryRecord,
  FaultKind,
  IdempotencyRecord,
  Mode,
  Organisation,
  OutboxEntry,
  Payment,
  PaymentKind,
  PaymentUpdate,
  Store,
} from './types.ts';

interface OrganisationsTable {
  id: string;
  name: string;
  settlement_currency: string;
  card_enabled: number;
  open_banking_approved: number;
  settlement_account: number;
  webhook_secret: string;
  clock_offset_ms: number;
  created_at: number;
}
interface ApiKeysTable {
  client_id: string;
  org_id: string;
  mode: string;
  secret_hash: string;
  created_at: number;
}
interface PaymentsTable {
  transaction_id: string;
  kind: string;
  session_id: string | null;
  org_id: string;
  mode: string;
  status: string;
  amount_total: number;
  currency: string;
  checkout_method: string;
  reference: string;
  particulars: string;
  code: string;
  redirect_url: string;
  webhook_url: string | null;
  foreign_transaction_id: string | null;
  description: string | null;
  transaction_type: string;
  created_at: number;
  updated_at: number;
  expires_at: number | null;
  completed_at: number | null;
}
interface WebhookOutboxTable {
  id: Generated<number>;
  transaction_id: string;
  org_id: string;
  mode: string;
  rail: string;
  url: string;
  body: string;
  legacy: number;
  attempts_made: number;
  next_attempt_at: number;
  state: string;
}
interface WebhookDeliveriesTable {
  id: Generated<number>;
  outbox_id: number;
  transaction_id: string;
  url: string;
  attempt: number;
  at: number;
  signed: number;
  response_status: number | null;
  error: string | null;
  final: number;
  done: number;
}
interface IdempotencyKeysTable {
  org_id: string;
  mode: string;
  key: string;
  kind: string | null;
  fingerprint: string;
  status: number;
  body: string;
  created_at: number;
  expires_at: number;
}
interface Tables {
  settings: { key: string; value: string };
  organisations: OrganisationsTable;
  api_keys: ApiKeysTable;
  payments: PaymentsTable;
  idempotency_keys: IdempotencyKeysTable;
  faults: { org_id: string; kind: string; remaining: number };
  webhook_outbox: WebhookOutboxTable;
  webhook_deliveries: WebhookDeliveriesTable;
}

function toOrganisation(row: Selectable<OrganisationsTable>): Organisation {
  return {
    id: row.id,
    name: row.name,
    settlementCurrency: row.settlement_currency as Organisation['settlementCurrency'],
    cardEnabled: row.card_enabled === 1,
    openBankingApproved: row.open_banking_approved === 1,
    settlementAccount: row.settlement_account === 1,
    webhookSecret: row.webhook_secret,
    clockOffsetMs: row.clock_offset_ms,
  };
}

function toPayment(row: Selectable<PaymentsTable>): Payment {
  return {
    transactionId: row.transaction_id,
    kind: row.kind as Payment['kind'],
    sessionId: row.session_id,
    orgId: row.org_id,
    mode: row.mode as Mode,
    status: row.status,
    amountTotal: row.amount_total,
    currency: row.currency as Payment['currency'],
    checkoutMethod: row.checkout_method as Payment['checkoutMethod'],
    reference: row.reference,
    particulars: row.particulars,
    code: row.code,
    redirectUrl: row.redirect_url,
    webhookUrl: row.webhook_url,
    foreignTransactionId: row.foreign_transaction_id,
    description: row.description,
    transactionType: row.transaction_type as Payment['transactionType'],
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    expiresAt: row.expires_at,
    completedAt: row.completed_at,
  };
}

function toOutbox(row: Selectable<WebhookOutboxTable>): OutboxEntry {
  return {
    id: row.id,
    transactionId: row.transaction_id,
    orgId: row.org_id,
    mode: row.mode as Mode,
    rail: row.rail as OutboxEntry['rail'],
    url: row.url,
    body: row.body,
    legacy: row.legacy === 1,
    attemptsMade: row.attempts_made,
    nextAttemptAt: row.next_attempt_at,
    state: row.state as OutboxEntry['state'],
  };
}

function toDelivery(row: Selectable<WebhookDeliveriesTable>): DeliveryRecord {
  return {
    id: row.id,
    outboxId: row.outbox_id,
    transactionId: row.transaction_id,
    url: row.url,
    attempt: row.attempt,
    at: row.at,
    signed: row.signed === 1,
    responseStatus: row.response_status,
    error: row.error,
    final: row.final === 1,
  };
}

function paymentRow(p: Payment): PaymentsTable {
  return {
    transaction_id: p.transactionId,
    kind: p.kind,
    session_id: p.sessionId,
    org_id: p.orgId,
    mode: p.mode,
    status: p.status,
    amount_total: p.amountTotal,
    currency: p.currency,
    checkout_method: p.checkoutMethod,
    reference: p.reference,
    particulars: p.particulars,
    code: p.code,
    redirect_url: p.redirectUrl,
    webhook_url: p.webhookUrl,
    foreign_transaction_id: p.foreignTransactionId,
    description: p.description,
    transaction_type: p.transactionType,
    created_at: p.createdAt,
    updated_at: p.updatedAt,
    expires_at: p.expiresAt,
    completed_at: p.completedAt,
  };
}

/**
 * Kysely prepares every query anew; our queries are a fixed set of SQL texts, so their
 * prepared statements are kept and reused (better-sqlite3 statements are reusable).
 */
function withStatementCache(database: Database.Database) {
  const statements = new Map<string, Database.Statement>();
  return {
    close: () => database.close(),
    prepare(sqlText: string) {
      let statement = statements.get(sqlText);
      if (!statement) {
        statement = database.prepare(sqlText);
        if (statements.size < 500) statements.set(sqlText, statement);
      }
      return statement;
    },
  };
}

/**
 * A query written with the typed builder, compiled to SQL once, and run directly on a
 * cached better-sqlite3 statement: for the per-request reads, Kysely's per-call building,
 * compiling and async connection queue cost more than SQLite's own work. Arguments are
 * passed as sentinels at compile time to learn where each one goes.
 */
function precompile<A extends unknown[]>(
  database: Database.Database,
  build: (...args: A) => { compile(): { sql: string; parameters: readonly unknown[] } },
  arity: A['length'],
) {
  const sentinels = Array.from({ length: arity }, (_, i) => `\u0000arg${i}\u0000`) as unknown as A;
  const { sql: text, parameters } = build(...sentinels).compile();
  const positions = parameters.map((p) => (sentinels as unknown[]).indexOf(p));
  const statement = database.prepare(text);
  const bind = (args: A) => positions.map((at, i) => (at >= 0 ? args[at] : parameters[i]));
  return {
    get: (...args: A): unknown => statement.get(...bind(args)),
    run: (...args: A) => statement.run(...bind(args)),
  };
}

const PAYMENT_COLUMNS = [
  'transaction_id',
  'kind',
  'session_id',
  'org_id',
  'mode',
  'status',
  'amount_total',
  'currency',
  'checkout_method',
  'reference',
  'particulars',
  'code',
  'redirect_url',
  'webhook_url',
  'foreign_transaction_id',
  'description',
  'transaction_type',
  'created_at',
  'updated_at',
  'expires_at',
  'completed_at',
] as const satisfies ReadonlyArray<keyof PaymentsTable>;

const IDEMPOTENCY_COLUMNS = [
  'org_id',
  'mode',
  'key',
  'kind',
  'fingerprint',
  'status',
  'body',
  'created_at',
  'expires_at',
] as const satisfies ReadonlyArray<keyof IdempotencyKeysTable>;

/** Idempotency records deleted per statement by the clean-up (a few milliseconds' work). */
export const CLEANUP_CHUNK = 1000;

/** How many payments read by session id are kept (a few MB at most). */
const SESSION_CACHE_SIZE = 2000;

interface PendingCreate {
  payment: Payment;
  idempotency: IdempotencyRecord | undefined;
  /** With the live record that already holds the key, if one does (nothing is written then). */
  resolve: (holder: IdempotencyRecord | undefined) => void;
  reject: (error: unknown) => void;
}

export class SqliteStore implements Store {
  readonly db: Kysely<Tables>;
  /** Compiled in migrate(), once the tables exist. */
  private queries!: ReturnType<SqliteStore['precompileQueries']>;
  /** Organisations with an armed fault: most creates then skip the fault check's write. */
  private readonly armedFaults = new Set<string>();
  private readonly organisations = new Map<string, Organisation>();
  private readonly apiKeys = new Map<string, ApiKey | null>();

  /**
   * @param rewindFrames WAL length (4 KiB frames) at which the background thread has the
   *   WAL rewound: about 64 MB by default.
   */
  constructor(
    file: string,
    private readonly rewindFrames = 16_384,
  ) {
    if (file !== ':memory:') mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    const database = new Database(file);
    database.pragma('journal_mode = WAL');
    // WAL with synchronous=NORMAL survives a process crash (not a power loss) and keeps writes fast.
    database.pragma('synchronous = NORMAL');
    database.pragma('foreign_keys = ON');
    database.pragma('busy_timeout = 5000');
    this.db = new Kysely<Tables>({ dialect: new SqliteDialect({ database: withStatementCache(database) }) });
    this.database = database;
    this.file = file === ':memory:' ? undefined : path.resolve(file);
  }

  /** The database file (undefined in memory), checkpointed by the background thread. */
  private readonly file: string | undefined;
  private stopCheckpoints: (() => Promise<void>) | undefined;

  private readonly database: Database.Database;

  private precompileQueries() {
    const db = this.db;
    return {
      paymentBySession: precompile(
        this.database,
        (orgId: string, sessionId: string) =>
          db.selectFrom('payments').selectAll().where('session_id', '=', sessionId).where('org_id', '=', orgId),
        2,
      ),
      idempotency: precompile(
        this.database,
        (orgId: string, mode: string, key: string) =>
          db
            .selectFrom('idempotency_keys')
            .selectAll()
            .where('org_id', '=', orgId)
            .where('mode', '=', mode)
            .where('key', '=', key),
        3,
      ),
      // Inserts take one argument per column, in the order of the column lists above.
      insertPayment: precompile(
        this.database,
        (...values: unknown[]) =>
          db.insertInto('payments').values(Object.fromEntries(PAYMENT_COLUMNS.map((c, i) => [c, values[i]])) as never),
        PAYMENT_COLUMNS.length,
      ),
      // Claims a key: inserts its record, or replaces one past its 24 hours (it may still be
      // on disk until the next clean-up). A live record is left as it is, and nothing changes.
      claimIdempotency: precompile(
        this.database,
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

  async migrate(): Promise<void> {
    const { error } = await new Migrator({ db: this.db, provider: migrationProvider }).migrateToLatest();
    if (error) throw error;
    this.queries = this.precompileQueries();
    const armed = await this.db.selectFrom('faults').select('org_id').where('remaining', '>', 0).execute();
    for (const row of armed) this.armedFaults.add(row.org_id);
    if (this.file) {
      this.stopCheckpoints = await checkpointInBackground(this.file, {
        rewindFrames: this.rewindFrames,
        commits: {
          hold: () => {
            this.commitsHeld = true;
          },
          release: () => {
            this.commitsHeld = false;
            if (this.pendingCreates.length > 0) this.commitCreates();
          },
        },
      });
      // Checkpoints now happen off the event loop, and the background thread has the WAL
      // rewound once it passes rewindFrames (see background.ts). A commit checkpoints only
      // if the WAL grows well past that because the thread fell behind; after such a burst
      // the file is cut back to twice the rewind length.
      if (this.stopCheckpoints) {
        this.database.pragma(`wal_autocheckpoint = ${this.rewindFrames * 2 + 8192}`);
        this.database.pragma(`journal_size_limit = ${this.rewindFrames * 4096 * 2}`);
      }
    }
  }

  async close(): Promise<void> {
    // The background connection closes first: the last connection to close checkpoints
    // the WAL into the database file and removes it.
    await this.stopCheckpoints?.();
    await this.db.destroy();
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
    this.organisations.set(org.id, { ...org });
  }

  async getOrganisation(id: string): Promise<Organisation | undefined> {
    const cached = this.organisations.get(id);
    if (cached) return cached;
    const row = await this.db.selectFrom('organisations').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) return undefined;
    const org = toOrganisation(row);
    this.organisations.set(id, org);
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
    this.organisations.delete(orgId);
  }

  async setWebhookSecret(orgId: string, secret: string): Promise<void> {
    await this.db.updateTable('organisations').set({ webhook_secret: secret }).where('id', '=', orgId).execute();
    this.organisations.delete(orgId);
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
    this.apiKeys.set(key.clientId, { ...key });
  }

  async getApiKey(clientId: string): Promise<ApiKey | undefined> {
    const cached = this.apiKeys.get(clientId);
    if (cached !== undefined) return cached ?? undefined;
    const row = await this.db.selectFrom('api_keys').selectAll().where('client_id', '=', clientId).executeTakeFirst();
    const key = row
      ? { clientId: row.client_id, orgId: row.org_id, mode: row.mode as Mode, secretHash: row.secret_hash }
      : undefined;
    // Unknown ids are not cached: anyone can send them, and the cache must stay bounded.
    if (key) this.apiKeys.set(clientId, key);
    return key;
  }

  async deleteApiKey(clientId: string): Promise<boolean> {
    const result = await this.db.deleteFrom('api_keys').where('client_id', '=', clientId).executeTakeFirst();
    this.apiKeys.delete(clientId);
    return Number(result.numDeletedRows) > 0;
  }

  /**
   * Creates are committed in groups: every create that reaches the store during one turn
   * of the event loop goes into one SQLite transaction, so one WAL commit (the costly
   * part: a write of every touched page) serves many concurrent requests. Each create
   * still resolves only once its rows are committed. If the group fails (a constraint),
   * it is rolled back whole and each create is retried in a transaction of its own, so
   * only the faulty one fails (savepoints per create would cost more than the inserts).
   * The idempotency key is claimed in the same transaction: on its own, a read costs a
   * WAL read transaction of its own (file and shared-memory locks, about 15 µs); inside
   * the group's, claiming it is part of storing its record.
   */
  createPayment(payment: Payment, idempotency?: IdempotencyRecord): Promise<IdempotencyRecord | undefined> {
    return new Promise<IdempotencyRecord | undefined>((resolve, reject) => {
      this.pendingCreates.push({ payment, idempotency, resolve, reject });
      if (this.pendingCreates.length === 1) setImmediate(() => this.commitCreates());
    });
  }

  private readonly pendingCreates: PendingCreate[] = [];

  /** Set while the background thread copies the last of the WAL before its rewind. */
  private commitsHeld = false;

  private commitCreates(): void {
    if (this.commitsHeld) return;
    const batch = this.pendingCreates.splice(0);
    const insert = (item: PendingCreate) => this.insertPayment(item.payment, item.idempotency);
    let holders: (IdempotencyRecord | undefined)[];
    try {
      holders = this.database.transaction(() => batch.map(insert))();
    } catch {
      for (const item of batch) {
        try {
          item.resolve(this.database.transaction(insert)(item));
        } catch (error) {
          item.reject(error);
        }
      }
      return;
    }
    for (const [i, item] of batch.entries()) item.resolve(holders[i]);
  }

  /**
   * The key is claimed first, in the statement that stores its record: a create (the
   * common case) then costs no lookup of its own, and only a key held by a live record is
   * read back, with nothing written.
   */
  private insertPayment(payment: Payment, idempotency?: IdempotencyRecord): IdempotencyRecord | undefined {
    if (idempotency) {
      const record: IdempotencyKeysTable = {
        org_id: idempotency.orgId,
        mode: idempotency.mode,
        key: idempotency.key,
        kind: idempotency.kind,
        fingerprint: idempotency.fingerprint,
        status: idempotency.status,
        body: idempotency.body,
        created_at: idempotency.createdAt,
        expires_at: idempotency.expiresAt,
      };
      if (this.queries.claimIdempotency.run(...IDEMPOTENCY_COLUMNS.map((c) => record[c])).changes === 0) {
        return this.getIdempotency(idempotency.orgId, idempotency.mode, idempotency.key);
      }
    }
    const row = paymentRow(payment);
    this.queries.insertPayment.run(...PAYMENT_COLUMNS.map((c) => row[c]));
    return undefined;
  }

  /**
   * Sessions read by id, the most polled read ("the authoritative way to decide
   * fulfilment"). Even an indexed read costs a WAL read transaction (file and shared-memory
   * locks: about 17 µs), so recently read payments are kept, bounded, and handed out frozen
   * (one object per stored row, so readers can memoise what they derive from it). Only this
   * process writes payments, and updatePayment drops an entry after its commit, so an entry
   * is always the row as stored. Misses are not kept: anyone can send unknown ids.
   */
  private readonly sessionCache = new Map<string, Readonly<Payment>>();
  private readonly sessionCacheKeys = new Map<string, string>();

  async getPaymentBySessionId(orgId: string, sessionId: string): Promise<Readonly<Payment> | undefined> {
    const key = `${orgId}\u0000${sessionId}`;
    const cached = this.sessionCache.get(key);
    if (cached) return cached;
    const row = this.queries.paymentBySession.get(orgId, sessionId) as Selectable<PaymentsTable> | undefined;
    if (!row) return undefined;
    const payment = Object.freeze(toPayment(row));
    if (this.sessionCache.size >= SESSION_CACHE_SIZE) {
      const [oldest, old] = this.sessionCache.entries().next().value!;
      this.sessionCache.delete(oldest);
      this.sessionCacheKeys.delete(old.transactionId);
    }
    this.sessionCache.set(key, payment);
    this.sessionCacheKeys.set(payment.transactionId, key);
    return payment;
  }

  private forgetPayment(transactionId: string): void {
    const key = this.sessionCacheKeys.get(transactionId);
    if (key === undefined) return;
    this.sessionCacheKeys.delete(transactionId);
    this.sessionCache.delete(key);
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
      return await this.changePayment(transactionId, update, webhook);
    } finally {
      // After the commit: a read that ran before it (and kept the old row) is forgotten.
      this.forgetPayment(transactionId);
    }
  }

  private changePayment(
    transactionId: string,
    update: PaymentUpdate,
    webhook?: Omit<OutboxEntry, 'id' | 'attemptsMade' | 'state'>,
  ): Promise<OutboxEntry | undefined | false> {
    return this.db.transaction().execute(async (trx) => {
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

  private getIdempotency(orgId: string, mode: Mode, key: string): IdempotencyRecord | undefined {
    const row = this.queries.idempotency.get(orgId, mode, key) as Selectable<IdempotencyKeysTable> | undefined;
    return row
      ? {
          orgId: row.org_id,
          mode: row.mode as Mode,
          key: row.key,
          kind: row.kind as PaymentKind | null,
          fingerprint: row.fingerprint,
          status: row.status,
          body: row.body,
          createdAt: row.created_at,
          expiresAt: row.expires_at,
        }
      : undefined;
  }

  async setFault(orgId: string, kind: FaultKind, times: number): Promise<void> {
    this.armedFaults.add(orgId);
    await this.db
      .insertInto('faults')
      .values({ org_id: orgId, kind, remaining: times })
      .onConflict((oc) => oc.columns(['org_id', 'kind']).doUpdateSet({ remaining: times }))
      .execute();
  }

  async takeFault(orgId: string, kind: FaultKind): Promise<boolean> {
    if (!this.armedFaults.has(orgId)) return false;
    const result = await this.db
      .updateTable('faults')
      .set((eb) => ({ remaining: eb('remaining', '-', 1) }))
      .where('org_id', '=', orgId)
      .where('kind', '=', kind)
      .where('remaining', '>', 0)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
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
