/**
 * How the PostgreSQL store answers the reads every request makes (its key and
 * organisation, a polled session, whether a fault is armed): batched per turn of the event
 * loop (perTurn, connection.ts), nothing cached. Any number of servers may share the
 * database, so every read asks it.
 */
import type { Kysely } from 'kysely';
import { type Tables, toOrganisation, toPayment } from '../schema.ts';
import type { ApiKey, Organisation, Payment } from '../types.ts';
import { perTurn } from './connection.ts';

export type Account = { apiKey: ApiKey; org: Organisation };

/** API keys with their organisations, by client id. */
export function accountsPerTurn(db: Kysely<Tables>) {
  return perTurn<string, Account | undefined>(async (clientIds) => {
    const rows = await db
      .selectFrom('api_keys')
      .innerJoin('organisations', 'organisations.id', 'api_keys.org_id')
      .selectAll('organisations')
      .select(['api_keys.client_id', 'api_keys.org_id', 'api_keys.mode', 'api_keys.secret_hash'])
      .where('api_keys.client_id', 'in', [...new Set(clientIds)])
      .execute();
    const found = new Map(
      rows.map((row) => [
        row.client_id,
        {
          apiKey: { clientId: row.client_id, orgId: row.org_id, mode: row.mode, secretHash: row.secret_hash },
          org: toOrganisation(row),
        },
      ]),
    );
    return clientIds.map((id) => found.get(id));
  });
}

/** Payments by session id, each only of the organisation that asks. */
export function sessionsPerTurn(db: Kysely<Tables>) {
  return perTurn<{ orgId: string; sessionId: string }, Payment | undefined>(async (wanted) => {
    const rows = await db
      .selectFrom('payments')
      .selectAll()
      .where('session_id', 'in', [...new Set(wanted.map((w) => w.sessionId))])
      .execute();
    const found = new Map(rows.map((row) => [row.session_id, toPayment(row)]));
    return wanted.map((w) => {
      const payment = found.get(w.sessionId);
      return payment?.orgId === w.orgId ? payment : undefined;
    });
  });
}

/** Organisations with some armed fault, asked per turn: most creates then make no write for it. */
export function armedPerTurn(db: Kysely<Tables>) {
  return perTurn<string, boolean>(async (orgIds) => {
    const rows = await db
      .selectFrom('faults')
      .select('org_id')
      .distinct()
      .where('org_id', 'in', [...new Set(orgIds)])
      .where('remaining', '>', 0)
      .execute();
    const armed = new Set(rows.map((row) => row.org_id));
    return orgIds.map((id) => armed.has(id));
  });
}
