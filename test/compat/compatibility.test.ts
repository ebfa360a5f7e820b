/**
 * The contract's evolution (RELEASING.md): the compatibility gate classifies each kind of
 * description change for each party (a fixture of labelled changes, webhooks with the
 * receiver's polarity and open sets included), fails a breaking change no change file
 * acknowledges with a major version, and writes the changes in words; the Pact contract
 * of every supported client release is verified against the current server, and the
 * matrix turns red when the server breaks one.
 */
import { execFile } from 'node:child_process';
import { type AddressInfo, createServer } from 'node:net';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changelogOf } from '../../scripts/compat/changelog.ts';
import { type Change, compareContracts, type Kind, type Party } from '../../scripts/compat/contract-diff.ts';
import { contractAt, releases } from '../../scripts/compat/releases.ts';
import { repoRoot } from '../support/description.ts';
import { editJson, startMutatingProxy } from '../support/mutating-proxy.ts';
import { paced } from '../support/pace.ts';
import { SANDBOX_TOKEN, startTestServer, type TestServer } from '../support/server.ts';

const run = promisify(execFile);
const released = contractAt(releases('contract').at(-1)!);
type Contract = typeof released;
type Doc = Contract['openapi'];

const schemas = (c: Contract): Record<string, Doc> => c.openapi.components.schemas;
const signature = (c: Contract) => c.openapi.webhooks['checkout_session.completed'].post.parameters[0];

/** Each kind of change, and what it is for each party it concerns (the others see no change). */
const fixture: Array<{ change: string; edit: (c: Contract) => void; want: Partial<Record<Party, Kind>> }> = [
  {
    change: 'a response field removed',
    edit: (c) => {
      const s = schemas(c).CheckoutSession;
      delete s.properties.checkoutMethod;
      s.required = s.required.filter((f: string) => f !== 'checkoutMethod');
    },
    want: { 'API clients': 'breaking' },
  },
  {
    change: 'a response field retyped',
    edit: (c) => {
      schemas(c).CheckoutSession.properties.testMode = { type: 'string' };
    },
    want: { 'API clients': 'breaking' },
  },
  {
    change: 'a required request field added',
    edit: (c) => {
      const s = schemas(c).CheckoutSessionCreateRequest;
      s.properties.channel = { type: 'string' };
      s.required.push('channel');
    },
    want: { 'API clients': 'breaking' },
  },
  {
    change: 'a request pattern narrowed',
    edit: (c) => {
      schemas(c).CreditorReference.properties.reference.pattern = '^[0-9A-Z]{1,12}$';
    },
    want: { 'API clients': 'breaking' },
  },
  {
    change: 'an optional request field added',
    edit: (c) => {
      schemas(c).CheckoutSessionCreateRequest.properties.channel = { type: 'string' };
    },
    want: { 'API clients': 'non-breaking' },
  },
  {
    change: 'a request pattern widened, with its maxLength (particulars from {0,12} to {0,20})',
    edit: (c) => {
      const particulars = schemas(c).CreditorReference.properties.particulars;
      particulars.pattern = '^[a-zA-Z0-9- ]{0,20}$';
      particulars.maxLength = 20;
    },
    want: { 'API clients': 'non-breaking' },
  },
  {
    change: 'a request pattern narrowed (a character no longer taken)',
    edit: (c) => {
      schemas(c).CreditorReference.properties.particulars.pattern = '^[a-zA-Z0-9 ]{0,12}$';
    },
    want: { 'API clients': 'breaking' },
  },
  {
    change: 'a pattern of a form the gate does not read, changed',
    edit: (c) => {
      schemas(c).RedirectUrl.pattern = '^[Hh][Tt][Tt][Pp][Ss]://';
    },
    want: { 'API clients': 'undecided' },
  },
  {
    change: 'a response field added',
    edit: (c) => {
      schemas(c).CheckoutSession.properties.settledAt = { type: 'string' };
    },
    want: { 'API clients': 'non-breaking' },
  },
  {
    change: 'a value added to a closed set in responses (currency)',
    edit: (c) => {
      schemas(c).Currency.enum.push('USD');
    },
    want: { 'API clients': 'breaking' },
  },
  {
    change: 'a value added to an open set (status)',
    edit: (c) => {
      schemas(c).CheckoutSessionStatus.anyOf[0].enum.push('authorised');
    },
    want: { 'API clients': 'non-breaking' },
  },
  {
    change: 'a member of an open set renamed (completed becomes succeeded)',
    edit: (c) => {
      const known: string[] = schemas(c).CheckoutSessionStatus.anyOf[0].enum;
      known[known.indexOf('completed')] = 'succeeded';
    },
    want: { 'API clients': 'breaking' },
  },
  {
    change: 'a response field that may now be null',
    edit: (c) => {
      schemas(c).CheckoutSession.properties.code.type = ['string', 'null'];
    },
    want: { 'API clients': 'breaking' },
  },
  {
    change: 'a request value that may now be null (widened)',
    edit: (c) => {
      schemas(c).CheckoutSessionCreateRequest.properties.description = { type: ['string', 'null'], maxLength: 255 };
    },
    want: { 'API clients': 'non-breaking' },
  },
  {
    change: 'a value added to a set sent and read back (checkoutMethod)',
    edit: (c) => {
      schemas(c).CheckoutMethod.enum.push('wallet');
    },
    want: { 'API clients': 'breaking' },
  },
  {
    change: 'a request range narrowed',
    edit: (c) => {
      schemas(c).AmountTotal.maximum = 5000;
    },
    want: { 'API clients': 'breaking' },
  },
  {
    change: 'the request body closed to fields of its own',
    edit: (c) => {
      schemas(c).CheckoutSessionCreateRequest.additionalProperties = false;
    },
    want: { 'API clients': 'breaking' },
  },
  {
    change: 'the bearer scheme replaced by another',
    edit: (c) => {
      const schemes = c.openapi.components.securitySchemes;
      const name = Object.keys(schemes)[0]!;
      schemes[name] = { type: 'apiKey', in: 'header', name: 'x-api-key' };
    },
    want: { 'API clients': 'breaking' },
  },
  {
    change: 'a value added to an open set (error code), with its status and its words',
    edit: (c) => {
      const known = schemas(c).KnownErrorCode;
      known.enum.push('payment_method_paused');
      known['x-error-status'].payment_method_paused = 400;
      known['x-enumDescriptions'].payment_method_paused = 'The payment method is paused.';
    },
    want: { 'API clients': 'non-breaking' },
  },
  {
    change: 'the status of a code clients already meet changed',
    edit: (c) => {
      schemas(c).KnownErrorCode['x-error-status'].currency_mismatch = 409;
    },
    want: { 'API clients': 'breaking' },
  },
  {
    change: 'a webhook event added (an open set)',
    edit: (c) => {
      schemas(c).WebhookEventType.anyOf[0].enum.push('checkout_session.expired');
    },
    want: { 'webhook receivers': 'non-breaking' },
  },
  {
    change: 'a required field added to the webhook payload',
    edit: (c) => {
      const s = schemas(c).WebhookEvent;
      s.properties.amount = { type: 'number' };
      s.required.push('amount');
    },
    want: { 'webhook receivers': 'non-breaking' },
  },
  {
    change: 'a field removed from the webhook payload',
    edit: (c) => {
      const s = schemas(c).WebhookEvent;
      delete s.properties.foreignTransactionId;
      s.required = s.required.filter((f: string) => f !== 'foreignTransactionId');
    },
    want: { 'webhook receivers': 'breaking' },
  },
  {
    change: 'a webhook payload field retyped',
    edit: (c) => {
      schemas(c).WebhookEvent.properties.createdAt = { type: 'integer' };
    },
    want: { 'webhook receivers': 'breaking' },
  },
  {
    change: 'a field added to the legacy two-field body (closed, kept unchanged)',
    edit: (c) => {
      schemas(c).LegacyWebhookPayload.properties.amount = { type: 'number' };
    },
    want: { 'webhook receivers': 'breaking' },
  },
  {
    change: 'what the service takes as an answer narrowed (200 only, no other 2xx)',
    edit: (c) => {
      const responses = c.openapi.webhooks['checkout_session.completed'].post.responses;
      responses['200'] = { description: 'Only 200 counts.' };
      responses['204'] = { description: 'Not received.' };
    },
    want: { 'webhook receivers': 'breaking' },
  },
  {
    change: 'a new signature scheme without v1',
    edit: (c) => {
      signature(c).schema = { type: 'string', pattern: '^t=\\d+,v2=[0-9a-f]+$' };
      signature(c).example = 't=1767225600,v2=ab';
    },
    want: { 'webhook receivers': 'breaking' },
  },
  {
    change: 'a further signature version beside v1',
    edit: (c) => {
      signature(c).example = `${signature(c).example},v2=${'ab'.repeat(32)}`;
    },
    want: {},
  },
  {
    change: 'a sandbox operation removed',
    edit: (c) => {
      delete c.sandbox.paths['/sandbox/faults'];
    },
    want: { 'sandbox users': 'breaking' },
  },
  {
    change: 'a field of a sandbox answer removed',
    edit: (c) => {
      const answer = c.sandbox.paths['/sandbox/organisations'].post.responses['200'].content['application/json'].schema;
      const schema = answer.$ref ? c.sandbox.components.schemas[answer.$ref.split('/').at(-1)] : answer;
      delete schema.properties.webhookSigningSecret;
      schema.required = (schema.required ?? []).filter((f: string) => f !== 'webhookSigningSecret');
    },
    want: { 'sandbox users': 'breaking' },
  },
  {
    change: 'an optional sandbox request field added',
    edit: (c) => {
      const op = c.sandbox.paths['/sandbox/organisations'].post;
      const schema = op.requestBody.content['application/json'].schema;
      (schema.properties ?? c.sandbox.components.schemas[schema.$ref.split('/').at(-1)].properties).note = {
        type: 'string',
      };
    },
    want: { 'sandbox users': 'non-breaking' },
  },
  {
    change: 'an example changed',
    edit: (c) => {
      schemas(c).CheckoutSession.examples[0].checkoutMethod = 'card';
    },
    want: { 'API clients': 'annotation' },
  },
  {
    change: 'a code named among those the portal fixes (x-account-configuration)',
    edit: (c) => {
      const known = schemas(c).KnownErrorCode;
      known['x-account-configuration'] = [...(known['x-account-configuration'] ?? []), 'currency_mismatch'];
    },
    want: { 'API clients': 'annotation' },
  },
  {
    change: 'an operation described in other words',
    edit: (c) => {
      c.openapi.paths['/api/token'].post.description += ' Reuse the token until it expires.';
    },
    want: { 'API clients': 'annotation' },
  },
];

const ORDER: Kind[] = ['annotation', 'deprecated', 'non-breaking', 'undecided', 'breaking'];
/** The most serious kind of change per party. */
function worst(changes: Change[]): Partial<Record<Party, Kind>> {
  const out: Partial<Record<Party, Kind>> = {};
  for (const c of changes)
    if (!out[c.party] || ORDER.indexOf(c.kind) > ORDER.indexOf(out[c.party]!)) out[c.party] = c.kind;
  return out;
}

describe('the compatibility gate classifies each change for each party', () => {
  it.each(fixture)('$change', ({ edit, want }) => {
    const after = structuredClone(released);
    edit(after);
    expect(worst(compareContracts(released, after))).toEqual(want);
  });

  it('sees no change between the last release and itself', () => {
    expect(compareContracts(released, structuredClone(released))).toEqual([]);
  });

  it('writes the changes in sentences, breaking first with whom it breaks, each schema or operation named', () => {
    const after = structuredClone(released);
    fixture.find((f) => f.change === 'a field removed from the webhook payload')!.edit(after);
    fixture.find((f) => f.change === 'an optional request field added')!.edit(after);
    const text = changelogOf(compareContracts(released, after));
    expect(text).toBe(
      [
        '### Breaking',
        '',
        '- Breaks **webhook receivers**: `WebhookEvent` (in the payload of the `checkout_session.completed` webhook): field `foreignTransactionId` removed.',
        '',
        '### Added',
        '',
        '- `CheckoutSessionCreateRequest` (in the request of `POST /api/checkout-sessions`): new field `channel`.',
      ].join('\n'),
    );
  });
});

describe('the changelog reads as sentences, a release to a screen', () => {
  const changelog = (...changes: string[]) => {
    const after = structuredClone(released);
    for (const change of changes) fixture.find((f) => f.change === change)!.edit(after);
    return changelogOf(compareContracts(released, after));
  };
  /** The lines a reader sees without opening a fold. */
  const shown = (text: string) =>
    text
      .split(/<details>[\s\S]*?<\/details>/)
      .join('')
      .split('\n')
      .filter((line) => line.trim() !== '');

  it('says a change of a schema once, with the operations it reaches, and the bound before and after', () => {
    const text = changelog('a request range narrowed');
    expect(text.split('\n').filter((line) => line.includes('`AmountTotal`'))).toEqual([
      '- Breaks **API clients**: `AmountTotal` (as `amount.total`, in the requests of `POST /api/checkout-sessions`, `POST /api/payment-links` and `POST /api/transaction`): maximum now `5000` (was `10000`).',
      expect.stringMatching(
        /^- `AmountTotal` \(as `amount\.total`, in the answers of `POST \/api\/checkout-sessions`, .* and \d+ more operations\): maximum now `5000` \(was `10000`\)\.$/,
      ),
    ]);
    expect(text).toMatch(/^### Breaking\n[\s\S]*\n### Changed\n/);
  });

  it('gathers a field added and made required, and values added to one set, into one sentence', () => {
    expect(changelog('a required request field added')).toContain(
      '`CheckoutSessionCreateRequest` (in the request of `POST /api/checkout-sessions`): new required field `channel`.',
    );
    expect(
      changelog(
        'a value added to an open set (status)',
        'a member of an open set renamed (completed becomes succeeded)',
      ),
    ).toMatch(
      /`CheckoutSessionStatus` \(as `status`, in the answers of .*\): value `completed` replaced by `succeeded`/,
    );
  });

  it('counts changes to the words alone in one line, listing where under a fold', () => {
    const text = changelog(
      'an operation described in other words',
      'an example changed',
      'a code named among those the portal fixes (x-account-configuration)',
    );
    expect(shown(text)).toEqual([
      '### Documentation',
      expect.stringMatching(
        /^- Descriptions, examples and annotations changed in 3 places, shown in \d+ operations; nothing a client sends or reads changes\.$/,
      ),
    ]);
    expect(text).toContain('<summary>Where (3 schemas and operations)</summary>');
    expect(text).toContain('- `POST /api/token`: description reworded.');
    expect(text).toMatch(
      /- `KnownErrorCode` \(in .*\): account-configuration codes \(`x-account-configuration`\) added\./,
    );
  });

  it('keeps every change of the fixture at once to about a screen, every breaking one in view with whom it breaks', () => {
    const text = changelog(...fixture.map((f) => f.change));
    const lines = shown(text);
    expect(lines.length).toBeLessThanOrEqual(35);
    const breaking = lines.slice(
      lines.indexOf('### Breaking') + 1,
      lines.findIndex((l, i) => i > 0 && l.startsWith('### ')),
    );
    expect(breaking.length).toBeGreaterThan(5);
    for (const line of breaking)
      expect(line).toMatch(/^- Breaks \*\*(API clients|webhook receivers|sandbox users)\*\*: /);
    // The library's wording is not the reader's.
    expect(text).not.toMatch(/\[(Added|Removed|Replaced|Changed)\]|annotation \(|content \(application\/json\)/);
  });
});

describe('the gate as npm test runs it (scripts/compat.ts check)', () => {
  /** A scratch tree with the release and the working tree's contract, as the gate reads them. */
  function scratch(edit?: (c: Contract) => void, changeFile?: string): string {
    const dir = mkdtempSync(path.join(tmpdir(), 'compat-'));
    cpSync(path.join(repoRoot, 'releases'), path.join(dir, 'releases'), { recursive: true });
    cpSync(path.join(repoRoot, 'openapi'), path.join(dir, 'openapi'), { recursive: true });
    mkdirSync(path.join(dir, 'generated'));
    cpSync(path.join(repoRoot, 'generated/package.json'), path.join(dir, 'generated/package.json'));
    if (edit) {
      // The gate reads the description as openapi/ holds it: the edited one goes there, as
      // JSON (which YAML reads), already bundled.
      const current = structuredClone(released);
      edit(current);
      writeFileSync(path.join(dir, 'openapi/openapi.yaml'), JSON.stringify(current.openapi));
      writeFileSync(path.join(dir, 'openapi/sandbox.yaml'), JSON.stringify(current.sandbox));
    }
    mkdirSync(path.join(dir, '.changeset'));
    if (changeFile) writeFileSync(path.join(dir, '.changeset/breaking-change.md'), changeFile);
    return dir;
  }
  const gate = (root: string) =>
    run(process.execPath, ['--import', 'tsx', 'scripts/compat.ts', 'check', '--root', root], { cwd: repoRoot }).then(
      (r) => ({ code: 0, ...r }),
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
  const removeField = fixture.find((f) => f.change === 'a response field removed')!.edit;

  it(
    'fails a breaking change no change file acknowledges, and passes it with a major version of the contract',
    async () => {
      const refused = await gate(scratch(removeField));
      expect(refused.code).toBe(1);
      expect(refused.stdout).toMatch(/API clients\s+breaking\s+GET \/api\/checkout-sessions\/\{id\}/);
      expect(refused.stderr).toMatch(
        /break API clients, and no change file makes a major version of @payment-service\/contract/,
      );
      const minor = await gate(scratch(removeField, "---\n'@payment-service/contract': minor\n---\n\nchecked.\n"));
      expect(minor.code).toBe(1);
      // The client follows a major of the contract with one of its own (RELEASING.md).
      const contractOnly = await gate(
        scratch(
          removeField,
          "---\n'@payment-service/contract': major\n---\n\ncheckoutMethod is no longer read back.\n",
        ),
      );
      expect(contractOnly.code).toBe(1);
      expect(contractOnly.stderr).toMatch(/but do not name @payment-service\/client: the client follows a major/);
      const major = await gate(
        scratch(
          removeField,
          "---\n'@payment-service/contract': major\n'@payment-service/client': major\n---\n\ncheckoutMethod is no longer read back.\n",
        ),
      );
      expect(major.code, major.stderr).toBe(0);
      expect(major.stdout).toMatch(/acknowledged by \.changeset\/breaking-change\.md \(major\)/);
    },
    paced(60_000),
  );

  it(
    'passes what breaks nobody once a change file tells it (CRLF or not), and holds info.version to the contract package’s version',
    async () => {
      const added = fixture.find((f) => f.change === 'a response field added')!.edit;
      const untold = await gate(scratch(added));
      expect(untold.code).toBe(1);
      expect(untold.stderr).toMatch(/no change file names @payment-service\/contract: run `npx changeset` \(minor/);
      const told = await gate(scratch(added, "---\r\n'@payment-service/contract': minor\r\n---\r\n\r\nsettledAt.\r\n"));
      expect(told.code, told.stderr).toBe(0);
      const dir = scratch();
      const file = path.join(dir, 'openapi/openapi.yaml');
      writeFileSync(file, readFileSync(file, 'utf8').replace(/^( {2}version: )\S+/m, '$19.9.9'));
      const drifted = await gate(dir);
      expect(drifted.code).toBe(1);
      expect(drifted.stderr).toMatch(
        /openapi\/openapi\.yaml: info\.version is 9\.9\.9, but @payment-service\/contract is/,
      );
    },
    paced(60_000),
  );
  it(
    'reads change files as Changesets does: one it cannot parse acknowledges nothing, and is named',
    async () => {
      const added = fixture.find((f) => f.change === 'a response field added')!.edit;
      for (const front of [
        // A package name starting with @ unquoted is not YAML.
        '@payment-service/contract: minor',
        // The same package twice.
        "'@payment-service/contract': minor\n'@payment-service/contract': major",
      ]) {
        const refused = await gate(scratch(added, `---\n${front}\n---\n\nsettledAt.\n`));
        expect(refused.code, front).toBe(1);
        expect(refused.stderr).toMatch(/\.changeset\/breaking-change\.md: Changesets cannot read this change file/);
      }
    },
    paced(60_000),
  );

  it(
    'refuses a bump smaller than what it found: a patch for a change users notice',
    async () => {
      const added = fixture.find((f) => f.change === 'a response field added')!.edit;
      const patch = await gate(scratch(added, "---\n'@payment-service/contract': patch\n---\n\nsettledAt.\n"));
      expect(patch.code).toBe(1);
      expect(patch.stderr).toMatch(/make only a patch of @payment-service\/contract .* a minor is the least/);
    },
    paced(60_000),
  );

  it(
    'compares openapi/ as it stands, generated/ rebuilt or not, and names what cannot be read',
    async () => {
      const edited = scratch();
      const file = path.join(edited, 'openapi/components/schemas/CheckoutSession.yaml');
      writeFileSync(
        file,
        readFileSync(file, 'utf8').replace(/^ {2}testMode:\n/m, '  settledAt:\n    type: string\n  testMode:\n'),
      );
      const seen = await gate(edited);
      expect(seen.stdout).toMatch(/API clients\s+non-breaking\s+GET \/api\/checkout-sessions\/\{id\}/);

      const dangling = scratch();
      const path_ = path.join(dangling, 'openapi/paths/api_checkout-sessions_{id}.yaml');
      writeFileSync(path_, readFileSync(path_, 'utf8').replace('schemas/CheckoutSession.yaml', 'schemas/NoSuch.yaml'));
      const unbundled = await gate(dangling);
      expect(unbundled.code).toBe(1);
      expect(unbundled.stderr).toMatch(/cannot compare the description: openapi\/openapi\.yaml cannot be bundled/);
      expect(unbundled.stderr).toMatch(/NoSuch\.yaml/);

      const released_ = releases('contract').at(-1)!;
      const notJson = scratch();
      writeFileSync(path.join(notJson, `releases/contract/${released_}/openapi.json`), '{ "openapi": ');
      const unread = await gate(notJson);
      expect(unread.code).toBe(1);
      expect(unread.stderr).toMatch(new RegExp(`releases/contract/${released_.replace(/\./g, '\\.')}/openapi.json: `));

      const circular = scratch();
      const doc = structuredClone(released.openapi);
      doc.components.schemas.CheckoutSession = { $ref: '#/components/schemas/Loop' };
      doc.components.schemas.Loop = { $ref: '#/components/schemas/CheckoutSession' };
      writeFileSync(path.join(circular, `releases/contract/${released_}/openapi.json`), JSON.stringify(doc));
      const round = await gate(circular);
      expect(round.code).toBe(1);
      expect(round.stderr).toMatch(/goes round a circle of references/);
    },
    paced(90_000),
  );
});

describe('old clients against the new server (npm run compat:matrix)', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(async () => {
    await t?.close();
  });
  const matrix = (baseUrl: string) =>
    run(
      process.execPath,
      ['--import', 'tsx', 'scripts/compat.ts', 'matrix', '--base-url', baseUrl, '--sandbox-token', SANDBOX_TOKEN],
      { cwd: repoRoot },
    ).then(
      (r) => ({ code: 0, ...r }),
      (e: { code: number; stdout: string; stderr: string }) => e,
    );

  it(
    'verifies every supported client release’s contract against the current server: can deploy',
    async () => {
      const green = await matrix(t.url);
      expect(green.code, `${green.stdout}\n${green.stderr}`).toBe(0);
      for (const version of releases('client'))
        expect(green.stdout).toMatch(
          new RegExp(`^${version.replace(/\./g, '\\.')}\\s+releases/client/.*verified \\(\\d+ interactions\\)$`, 'm'),
        );
      expect(green.stdout).toMatch(/can deploy: yes/);
    },
    paced(120_000),
  );

  it(
    'tells a server it cannot verify from one that breaks a client: a refused token or no server is exit 2',
    async () => {
      const script = ['--import', 'tsx', 'scripts/compat.ts', 'matrix'];
      const runWith = (baseUrl: string, token: string) =>
        run(process.execPath, [...script, '--base-url', baseUrl], {
          cwd: repoRoot,
          env: { ...process.env, SANDBOX_TOKEN: token },
        }).then(
          (r) => ({ code: 0, ...r }),
          (e: { code: number; stdout: string; stderr: string }) => e,
        );
      const refused = await runWith(t.url, 'not-the-token');
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/refused the sandbox token \(401\): nothing was verified/);
      expect(refused.stdout).not.toMatch(/can deploy/);
      // A port nothing listens on: one just freed.
      const free = await new Promise<number>((resolve) => {
        const probe = createServer().listen(0, '127.0.0.1', () => {
          const { port } = probe.address() as AddressInfo;
          probe.close(() => resolve(port));
        });
      });
      const nobody = await runWith(`http://127.0.0.1:${free}`, SANDBOX_TOKEN);
      expect(nobody.code).toBe(2);
      expect(nobody.stderr).toMatch(/is unreachable \(ECONNREFUSED\): nothing was verified/);
    },
    paced(60_000),
  );

  it(
    'turns red when the server breaks what a released client relies on (the token renamed access_token)',
    async () => {
      const proxy = await startMutatingProxy(t.url, {
        response: (m, r) =>
          m.url === '/api/token' && r.status === 200
            ? editJson(r, ({ accessToken, ...rest }) => ({ ...rest, access_token: accessToken }))
            : r,
      });
      try {
        const red = await matrix(proxy.url);
        expect(red.code, red.stdout).toBe(1);
        expect(red.stdout).toMatch(/^0\.1\.0\s+\S+\s+\S+\s+FAILED/m);
        expect(red.stdout).toMatch(/can deploy: no/);
      } finally {
        await proxy.close();
      }
    },
    paced(120_000),
  );
});
