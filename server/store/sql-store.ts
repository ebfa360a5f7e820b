/**
 * What every store does the same way, written once with Kysely's typed builder on the
 * shared schema (schema.ts, migrations.ts): each query here means the same on SQLite and
 * on PostgreSQL. Each dialect's folder (sqlite/, postgres/) holds the same files: its
 * connection (connection.ts), its creates (commits.ts: how a key is claimed with the
 * payment), the reads every request makes (reads.ts: the SQLite store keeps copies in
 * memory, which only its one process may), and its class over this one (store.ts), with
 * what its dialect does differently.
 */
import { type Kysely, Migrator, type OnConflictBuilder, type SelectQueryBuilder, sql, type Transaction } from 'kysely';
import { type Dialect, migrationProvider } from './migrations.ts';
import {
  idempotencyRow,
  paymentRow,
  type Tables,
  toApiKey,
  toDelivery,
  toIdempotency,
  toOrganisation,
  toOutbox,
  toPayment,
} from './schema.ts';
import type {
  ApiKey,
  DeliveryRecord,
  FaultKind,
  IdempotencyRecord,
  Lease,
  NewWebhook,
  Organisation,
  OutboxEntry,
  Payment,
  PaymentUpdate,
  Store,
} from './types.ts';

/** Idempotency records deleted per statement by the clean-up, which yields between statements. */
export const CLEANUP_CHUNK = 1000;

/**
 * How an insert claims an idempotency key when a record holds it: a record past its 24
 * hours (it may still be on disk until the next clean-up) is replaced by the proposed one;
 * a live record is left as it is, and the insert changes nothing.
 */
export const replaceExpiredKey = (oc: OnConflictBuilder<Tables, 'idempotency_keys'>) =>
  oc
    .columns(['org_id', 'mode', 'key'])
    .doUpdateSet((eb) => ({
      kind: eb.ref('excluded.kind'),
      fingerprint: eb.ref('excluded.fingerprint'),
      status: eb.ref('excluded.status'),
      body: eb.ref('excluded.body'),
      created_at: eb.ref('excluded.created_at'),
      expires_at: eb.ref('excluded.expires_at'),
    }))
    .where(({ eb, ref }) => eb('idempotency_keys.expires_at', '<=', ref('excluded.created_at')));

/** An id holding U+0000 names nothing stored (text holds no NUL); PostgreSQL refuses to even compare one. */
const nul = (...values: string[]) => values.some((v) => v.includes('\0'));

type DueQuery = SelectQueryBuilder<Tables, 'webhook_outbox' | 'organisations', { id: number }>;

export abstract class SqlStore implements Store {
  abstract readonly exclusive: boolean;

  constructor(
    readonly db: Kysely<Tables>,
    private readonly dialect: Dialect,
  ) {}

  abstract close(): Promise<void>;
  abstract createPayment(payment: Payment, idempotency?: IdempotencyRecord): Promise<IdempotencyRecord | undefined>;

  async migrate(): Promise<void> {
    const { error } = await new Migrator({ db: this.db, provider: migrationProvider(this.dialect) }).migrateToLatest();
    if (error) throw error;
  }

  /** Rows of the due webhooks a claim may take, locked by the claim where the dialect can. */
  protected lockForClaim(query: DueQuery): DueQuery {
    return query;
  }

  async writeProblem(): Promise<string | undefined> {
    try {
      // A write as a create makes one (a transaction that appends to the log), of one row.
      await this.putSetting('write_checked_at', String(Date.now()));
      return undefined;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }

  async getSetting(key: string): Promise<string | undefined> {
    if (nul(key)) return undefined;
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

  async ensureSetting(key: string, value: string): Promise<string> {
    await this.db
      .insertInto('settings')
      .values({ key, value })
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
    return (await this.getSetting(key)) ?? value;
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
  }

  async getOrganisation(id: string): Promise<Organisation | undefined> {
    if (nul(id)) return undefined;
    const row = await this.db.selectFrom('organisations').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toOrganisation(row) : undefined;
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
  }

  async setWebhookSecret(orgId: string, secret: string): Promise<void> {
    await this.db.updateTable('organisations').set({ webhook_secret: secret }).where('id', '=', orgId).execute();
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
  }

  async getApiKey(clientId: string): Promise<ApiKey | undefined> {
    if (nul(clientId)) return undefined;
    const row = await this.db.selectFrom('api_keys').selectAll().where('client_id', '=', clientId).executeTakeFirst();
    return row ? toApiKey(row) : undefined;
  }

  async getAccount(clientId: string): Promise<{ apiKey: ApiKey; org: Organisation } | undefined> {
    if (nul(clientId)) return undefined;
    const row = await this.db
      .selectFrom('api_keys')
      .innerJoin('organisations', 'organisations.id', 'api_keys.org_id')
      .selectAll('organisations')
      .select(['api_keys.client_id', 'api_keys.org_id', 'api_keys.mode', 'api_keys.secret_hash'])
      .where('api_keys.client_id', '=', clientId)
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      apiKey: { clientId: row.client_id, orgId: row.org_id, mode: row.mode, secretHash: row.secret_hash },
      org: toOrganisation(row),
    };
  }

  async deleteApiKey(clientId: string): Promise<boolean> {
    if (nul(clientId)) return false;
    const result = await this.db.deleteFrom('api_keys').where('client_id', '=', clientId).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /**
   * In `trx`: claims the key (inserts its record, or replaces one past its 24 hours) and
   * inserts the payment; or, when a live record holds the key, writes nothing and returns
   * that record.
   */
  protected async insertPayment(
    trx: Transaction<Tables>,
    payment: Payment,
    idempotency?: IdempotencyRecord,
  ): Promise<IdempotencyRecord | undefined> {
    if (idempotency) {
      const row = idempotencyRow(idempotency);
      const claimed = await trx
        .insertInto('idempotency_keys')
        .values(row)
        .onConflict(replaceExpiredKey)
        .executeTakeFirst();
      if (Number(claimed.numInsertedOrUpdatedRows ?? 0) === 0) {
        const holder = await trx
          .selectFrom('idempotency_keys')
          .selectAll()
          .where('org_id', '=', row.org_id)
          .where('mode', '=', row.mode)
          .where('key', '=', row.key)
          .executeTakeFirstOrThrow();
        return toIdempotency(holder);
      }
    }
    await trx.insertInto('payments').values(paymentRow(payment)).execute();
    return undefined;
  }

  async getPaymentBySessionId(orgId: string, sessionId: string): Promise<Readonly<Payment> | undefined> {
    if (nul(orgId, sessionId)) return undefined;
    const row = await this.db
      .selectFrom('payments')
      .selectAll()
      .where('session_id', '=', sessionId)
      .where('org_id', '=', orgId)
      .executeTakeFirst();
    return row ? toPayment(row) : undefined;
  }

  async getPayment(orgId: string, transactionId: string): Promise<Payment | undefined> {
    if (nul(orgId, transactionId)) return undefined;
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
    if (nul('transactionId' in by ? by.transactionId : by.sessionId)) return undefined;
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
    webhook?: { entry: NewWebhook; lease: Lease },
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
      const { entry, lease } = webhook;
      const row = await trx
        .insertInto('webhook_outbox')
        .values({
          transaction_id: entry.transactionId,
          org_id: entry.orgId,
          mode: entry.mode,
          rail: entry.rail,
          url: entry.url,
          body: entry.body,
          legacy: entry.legacy ? 1 : 0,
          attempts_made: 0,
          next_attempt_at: entry.nextAttemptAt,
          state: 'pending',
          lease_owner: lease.owner,
          lease_until: lease.until,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      return toOutbox(row);
    });
  }

  async claimDueWebhooks(lease: Lease, realNowMs: number, limit: number): Promise<OutboxEntry[]> {
    const due = this.lockForClaim(
      this.db
        .selectFrom('webhook_outbox')
        .innerJoin('organisations', 'organisations.id', 'webhook_outbox.org_id')
        .select('webhook_outbox.id')
        .where('webhook_outbox.state', '=', 'pending')
        .where(({ eb, ref }) =>
          eb(
            ref('webhook_outbox.next_attempt_at'),
            '<=',
            sql<number>`${realNowMs} + ${ref('organisations.clock_offset_ms')}`,
          ),
        )
        .where((eb) =>
          eb.or([eb('webhook_outbox.lease_until', 'is', null), eb('webhook_outbox.lease_until', '<', realNowMs)]),
        )
        .orderBy('webhook_outbox.next_attempt_at')
        .limit(limit),
    );
    const rows = await this.db
      .updateTable('webhook_outbox')
      .set({ lease_owner: lease.owner, lease_until: lease.until })
      .where('id', 'in', due)
      .returningAll()
      .execute();
    return rows.map(toOutbox).sort((a, b) => a.nextAttemptAt - b.nextAttemptAt);
  }

  async releaseWebhookLeases(): Promise<void> {
    await this.db
      .updateTable('webhook_outbox')
      .set({ lease_owner: null, lease_until: null })
      .where('lease_owner', 'is not', null)
      .execute();
  }

  async getWebhook(id: number): Promise<OutboxEntry | undefined> {
    const row = await this.db.selectFrom('webhook_outbox').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toOutbox(row) : undefined;
  }

  async unfinishedDelivery(outboxId: number): Promise<DeliveryRecord | undefined> {
    const row = await this.db
      .selectFrom('webhook_deliveries')
      .selectAll()
      .where('outbox_id', '=', outboxId)
      .where('done', '=', 0)
      .orderBy('id', 'desc')
      .executeTakeFirst();
    return row ? toDelivery(row) : undefined;
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
      return Number(row.id);
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
        .where('done', '=', 0)
        .returning('outbox_id')
        .executeTakeFirst();
      if (!row) return;
      await trx
        .updateTable('webhook_outbox')
        .set({ state: next.state, next_attempt_at: next.nextAttemptAt, lease_owner: null, lease_until: null })
        .where('id', '=', row.outbox_id)
        .execute();
    });
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
        .select(['org_id', 'mode', 'key'])
        .where('org_id', '=', org.id)
        .where('expires_at', '<=', realNowMs + Number(org.clock_offset_ms))
        .limit(CLEANUP_CHUNK);
      for (;;) {
        const result = await this.db
          .deleteFrom('idempotency_keys')
          .where(({ eb, refTuple }) =>
            eb(refTuple('org_id', 'mode', 'key'), 'in', expired.$asTuple('org_id', 'mode', 'key')),
          )
          .executeTakeFirst();
        deleted += Number(result.numDeletedRows);
        if (Number(result.numDeletedRows) < CLEANUP_CHUNK) break;
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    return { idempotencyRecords: deleted };
  }
}
