/**
 * Values whose form the document fixes wherever they appear (General conventions:
 * Timestamps; Transaction): ISO 8601 UTC timestamps and transaction UUIDs.
 */

/** A transaction id: "Each payment is tied to a transaction identified by a UUID". */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** ISO 8601 with a UTC designator (Z or +00:00): what the document's timestamps are. */
const UTC_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]00:?00)$/;

export function isUtcTimestamp(value: unknown): value is string {
  return typeof value === 'string' && UTC_TIMESTAMP.test(value) && !Number.isNaN(Date.parse(value));
}
