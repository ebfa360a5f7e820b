/**
 * Schema migrations, one set for every store, applied in name order by Kysely's Migrator
 * at start. A migration once released is never edited: add a new one. The column types
 * that the dialects name differently come from `types`: on SQLite they are what the
 * migrations always wrote; on PostgreSQL, times in milliseconds need 64 bits and amounts
 * a double.
 */
import {
  type ColumnDataType,
  type ColumnDefinitionBuilder,
  type Kysely,
  type Migration,
  type MigrationProvider,
  sql,
} from 'kysely';

export type Dialect = 'sqlite' | 'postgres';

interface ColumnTypes {
  /** Milliseconds since the epoch. */
  time: ColumnDataType;
  /** A JavaScript number, read back exactly (amounts). */
  double: ColumnDataType;
  /** Identity of the outbox and delivery rows, and references to it. */
  id: ColumnDataType;
}

const TYPES: Record<Dialect, ColumnTypes> = {
  sqlite: { time: 'integer', double: 'real', id: 'integer' },
  postgres: { time: 'bigint', double: 'double precision', id: 'bigint' },
};

function migrations(dialect: Dialect): Record<string, Migration> {
  const t = TYPES[dialect];
  /** A row id the database numbers. */
  const identity = (c: ColumnDefinitionBuilder) =>
    dialect === 'postgres' ? c.primaryKey().generatedByDefaultAsIdentity() : c.primaryKey().autoIncrement();
  return {
    '0001_initial': {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('settings')
          .addColumn('key', 'text', (c) => c.primaryKey())
          .addColumn('value', 'text', (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('organisations')
          .addColumn('id', 'text', (c) => c.primaryKey())
          .addColumn('name', 'text', (c) => c.notNull())
          .addColumn('settlement_currency', 'text', (c) => c.notNull())
          .addColumn('card_enabled', 'integer', (c) => c.notNull())
          .addColumn('open_banking_approved', 'integer', (c) => c.notNull())
          .addColumn('settlement_account', 'integer', (c) => c.notNull())
          .addColumn('webhook_secret', 'text', (c) => c.notNull())
          .addColumn('clock_offset_ms', t.time, (c) => c.notNull().defaultTo(0))
          .addColumn('created_at', t.time, (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('api_keys')
          .addColumn('client_id', 'text', (c) => c.primaryKey())
          .addColumn('org_id', 'text', (c) => c.notNull().references('organisations.id'))
          .addColumn('mode', 'text', (c) => c.notNull())
          .addColumn('secret_hash', 'text', (c) => c.notNull())
          .addColumn('created_at', t.time, (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('payments')
          .addColumn('transaction_id', 'text', (c) => c.primaryKey())
          .addColumn('kind', 'text', (c) => c.notNull())
          .addColumn('session_id', 'text', (c) => c.unique())
          .addColumn('org_id', 'text', (c) => c.notNull().references('organisations.id'))
          .addColumn('mode', 'text', (c) => c.notNull())
          .addColumn('status', 'text', (c) => c.notNull())
          .addColumn('amount_total', t.double, (c) => c.notNull())
          .addColumn('currency', 'text', (c) => c.notNull())
          .addColumn('checkout_method', 'text', (c) => c.notNull())
          .addColumn('reference', 'text', (c) => c.notNull())
          .addColumn('particulars', 'text', (c) => c.notNull())
          .addColumn('code', 'text', (c) => c.notNull())
          .addColumn('redirect_url', 'text', (c) => c.notNull())
          .addColumn('webhook_url', 'text')
          .addColumn('foreign_transaction_id', 'text')
          .addColumn('description', 'text')
          .addColumn('transaction_type', 'text', (c) => c.notNull())
          .addColumn('created_at', t.time, (c) => c.notNull())
          .addColumn('updated_at', t.time, (c) => c.notNull())
          .addColumn('expires_at', t.time)
          .execute();
        await db.schema.createIndex('payments_org').on('payments').columns(['org_id', 'created_at']).execute();
        await db.schema
          .createTable('idempotency_keys')
          .addColumn('org_id', 'text', (c) => c.notNull())
          .addColumn('mode', 'text', (c) => c.notNull())
          .addColumn('key', 'text', (c) => c.notNull())
          .addColumn('fingerprint', 'text', (c) => c.notNull())
          .addColumn('status', 'integer', (c) => c.notNull())
          .addColumn('body', 'text', (c) => c.notNull())
          .addColumn('created_at', t.time, (c) => c.notNull())
          .addColumn('expires_at', t.time, (c) => c.notNull())
          .addPrimaryKeyConstraint('idempotency_keys_pk', ['org_id', 'mode', 'key'])
          .execute();
        await db.schema
          .createIndex('idempotency_keys_expiry')
          .on('idempotency_keys')
          .columns(['org_id', 'expires_at'])
          .execute();
        await db.schema
          .createTable('faults')
          .addColumn('org_id', 'text', (c) => c.notNull())
          .addColumn('kind', 'text', (c) => c.notNull())
          .addColumn('remaining', 'integer', (c) => c.notNull())
          .addPrimaryKeyConstraint('faults_pk', ['org_id', 'kind'])
          .execute();
        await sql`select 1`.execute(db);
      },
    },
    '0002_lifecycle_and_webhooks': {
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('payments').addColumn('completed_at', t.time).execute();
        await db.schema
          .createTable('webhook_outbox')
          .addColumn('id', t.id, identity)
          .addColumn('transaction_id', 'text', (c) => c.notNull().references('payments.transaction_id'))
          .addColumn('org_id', 'text', (c) => c.notNull())
          .addColumn('rail', 'text', (c) => c.notNull())
          .addColumn('url', 'text', (c) => c.notNull())
          .addColumn('body', 'text', (c) => c.notNull())
          .addColumn('legacy', 'integer', (c) => c.notNull())
          .addColumn('mode', 'text', (c) => c.notNull())
          .addColumn('attempts_made', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('next_attempt_at', t.time, (c) => c.notNull())
          .addColumn('state', 'text', (c) => c.notNull())
          .execute();
        await db.schema
          .createIndex('webhook_outbox_due')
          .on('webhook_outbox')
          .columns(['state', 'next_attempt_at'])
          .execute();
        await db.schema
          .createTable('webhook_deliveries')
          .addColumn('id', t.id, identity)
          .addColumn('outbox_id', t.id, (c) => c.notNull().references('webhook_outbox.id'))
          .addColumn('transaction_id', 'text', (c) => c.notNull())
          .addColumn('url', 'text', (c) => c.notNull())
          .addColumn('attempt', 'integer', (c) => c.notNull())
          .addColumn('at', t.time, (c) => c.notNull())
          .addColumn('signed', 'integer', (c) => c.notNull())
          .addColumn('response_status', 'integer')
          .addColumn('error', 'text')
          .addColumn('final', 'integer', (c) => c.notNull())
          .addColumn('done', 'integer', (c) => c.notNull().defaultTo(0))
          .execute();
        await db.schema
          .createIndex('webhook_deliveries_transaction')
          .on('webhook_deliveries')
          .columns(['transaction_id', 'id'])
          .execute();
      },
    },
    // Which create a key was used on: the same key on another create endpoint is another
    // request. Records written before this migration have none and match any endpoint.
    '0003_idempotency_kind': {
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('idempotency_keys').addColumn('kind', 'text').execute();
      },
    },
    // Who is making a webhook's attempt, and until when (real time): with several servers
    // on one database, each attempt is made by the one server that claimed it, and passes
    // to another when its lease ends without an answer.
    '0004_webhook_leases': {
      async up(db: Kysely<unknown>) {
        await db.schema.alterTable('webhook_outbox').addColumn('lease_owner', 'text').execute();
        await db.schema.alterTable('webhook_outbox').addColumn('lease_until', t.time).execute();
      },
    },
  };
}

export const migrationProvider = (dialect: Dialect): MigrationProvider => ({
  getMigrations: async () => migrations(dialect),
});
