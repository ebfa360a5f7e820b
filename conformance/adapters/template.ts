/**
 * `payment-conformance adapter init`: a starter adapter, every capability stubbed. It is
 * plain JavaScript (an ES module, .mjs) that Node loads as it is, typed with JSDoc so an
 * editor, or `tsc --checkJs`, checks it against the suite's declarations.
 */

export const ADAPTER_TEMPLATE = `/**
 * A target adapter for payment-conformance: how the suite reaches the test controls of
 * your implementation of the payment service (organisations, API keys, its clock, payment
 * attempts, its delivery records, faults).
 *
 * The suite calls only the capabilities listed in \`capabilities\`. A check that needs one
 * you do not list is skipped, and the report names what it needed; list every one you
 * implement, so that the report says exactly what was covered. A method that throws, or
 * whose effect the public API does not show, ends its check as "error" (exit 2), never
 * as a verdict on your implementation.
 *
 * Run it as it is (Node loads an .mjs with no build step):
 *   npx --no -- payment-conformance run --base-url https://payments.test.example --adapter ./payment-adapter.mjs
 */
// @ts-check

/**
 * @param {string} what
 * @returns {never}
 */
const notYet = (what) => {
  throw new Error(\`\${what} is not implemented in this adapter yet\`);
};

/** @type {import('@payment-service/conformance').AdapterFactory} */
const createAdapter = ({ baseUrl }) => {
  // baseUrl is what --base-url says; your controls may live elsewhere (an admin API, a
  // database, a queue). Keep connections here, and release them in close().
  void baseUrl;

  /** @type {import('@payment-service/conformance').TargetAdapter} */
  const adapter = {
    // Remove what you do not implement.
    capabilities: [
      'createOrganisation',
      'createApiKey',
      'deleteApiKey',
      'rotateWebhookSecret',
      'advanceClock',
      'attempt',
      'webhookDeliveries',
      'injectFault',
      'paymentLinks',
      'legacyTransactions',
    ],

    /**
     * A new organisation with these settings, its webhook signing secret (whsec_...) and a
     * test API key (a live one too, if you can: the testMode check needs it). The suite
     * gets a token with the test key to confirm it works.
     */
    async createOrganisation(settings) {
      void settings; // { settlementCurrency: 'NZD' | 'AUD', cardEnabled, openBankingApproved, settlementAccount }
      return notYet('createOrganisation');
    },

    /** A new API key of the organisation, in that mode. */
    async createApiKey(orgId, mode) {
      void orgId;
      void mode;
      return notYet('createApiKey');
    },

    /** Removes the key: tokens already issued for it must then get 401 unknown_api_key. */
    async deleteApiKey(clientId) {
      void clientId;
      notYet('deleteApiKey');
    },

    /** Replaces the organisation's signing secret outright (no overlap); returns the new one. */
    async rotateWebhookSecret(orgId) {
      void orgId;
      return notYet('rotateWebhookSecret');
    },

    /**
     * Moves the organisation's clock forward: token expiry, session expiry, idempotency
     * memory and the card rail's retries all follow it, and so does the createdAt of a
     * session: the suite confirms a move by creating a session just before and just after.
     */
    async advanceClock(orgId, seconds) {
      void orgId;
      void seconds;
      notYet('advanceClock');
    },

    /**
     * A payment attempt as a payer would make it on the hosted page: on a checkout session,
     * a payment link or a legacy transaction, by card or open banking, that succeeds, is
     * declined or stays pending. redirectTo: where the payer's browser is sent on success
     * (redirectUrl with transactionId and checkoutSessionId), or null. After a success the
     * suite reads the session back until it leaves "created" and "pending" (--settle-timeout).
     */
    async attempt(target, rail, outcome) {
      void target; // { kind: 'checkout-session' | 'payment-link' | 'transaction', id }
      void rail;
      void outcome;
      return notYet('attempt');
    },

    /**
     * Your records of finished delivery attempts, for a transaction or a checkout session,
     * oldest first: { transactionId, url, attempt (1, 2, ...), at (ISO 8601, the
     * organisation's clock), signed, responseStatus (null without an answer), error (why
     * there was no answer, else null), final (no further attempt will follow) }.
     */
    async webhookDeliveries(query) {
      void query; // { transactionId } or { checkoutSessionId }
      return notYet('webhookDeliveries');
    },

    /**
     * internal_error_after_commit: the organisation's next create commits, then answers 500.
     * signing_secret_unavailable: its deliveries are sent with no Service-Signature header.
     * times: how many operations the fault lasts for; undefined means the next one only.
     */
    async injectFault(kind, orgId, times) {
      void kind;
      void orgId;
      void times;
      notYet('injectFault');
    },

    // paymentLinks and legacyTransactions: the document does not show how payment links and
    // legacy transactions are made, so without these the suite sends the requests it
    // modelled (conformance/README.md), and skips the checks that need one if your
    // implementation refuses them. Offer them to make these payments your own way. Each is
    // made for \`merchant\`: { orgId, mode, credentials, accessToken }, an organisation's API
    // key and a bearer token the suite got with it; make the payment as that merchant would
    // (e.g. POST with Authorization: Bearer accessToken), in its organisation and mode.

    /**
     * paymentLinks: a payment link payable by card (any amount), sending its completion
     * event to link.webhookUrl when given. Returns { id }: the link's id, its transaction id.
     */
    async createPaymentLink(merchant, link) {
      void merchant;
      void link; // { webhookUrl? }
      return notYet('createPaymentLink');
    },

    /**
     * paymentLinks: the link as the merchant reads it back (GET /api/payment-links/{id}), in
     * the document's words: { status?, testMode? }, each only where your read has it;
     * status one of created (payable), pending, completed (paid), failed, expired. After
     * an attempt the suite reads until the status shows its outcome (--settle-timeout).
     */
    async readPaymentLink(merchant, id) {
      void merchant;
      void id;
      return notYet('readPaymentLink');
    },

    /**
     * legacyTransactions: a transaction made the older way (POST /api/transaction, a payment
     * square or the portal), payable by card, whose legacy two-field body goes to
     * transaction.webhookUrl, made with transaction.foreignTransactionId where your way takes
     * one. Returns { transactionId }: its UUID.
     */
    async createLegacyTransaction(merchant, transaction) {
      void merchant;
      void transaction; // { webhookUrl, foreignTransactionId }
      return notYet('createLegacyTransaction');
    },

    /** Called once at the end of the run. */
    async close() {},
  };
  return adapter;
};

export default createAdapter;
`;
