/**
 * The layer rules of ARCHITECTURE.md, checked by dependency-cruiser on every `npm test`
 * (`npm run lint:deps`). Packages import each other by name, so an import of another
 * package resolves to its built entry (`client/dist/webhooks.js`): the rules name both
 * the sources and the built files of an entry.
 */
const entry = (pkg, names) => `^${pkg}/(dist/)?(${names.join('|')})\\.(ts|js|d\\.ts)$`;
const CLIENT_WEBHOOKS = ['signature', 'webhooks', 'webhooks-web', 'decimal'];

module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      comment: 'A module never depends on itself through others (types included).',
      severity: 'error',
      from: { path: '^(client|server|conformance|generated)/' },
      to: { circular: true },
    },
    {
      name: 'contract-imports-nothing',
      comment: 'generated/ is tool output: it imports no other part.',
      severity: 'error',
      from: { path: '^generated/' },
      to: { path: '^(client|server|conformance|examples|test|scripts|bench)/' },
    },
    {
      name: 'client-imports-the-contract-only',
      severity: 'error',
      from: { path: '^client/' },
      to: { path: '^(server|conformance|examples|test|scripts|bench)/' },
    },
    {
      name: 'client-webhooks-load-no-http-client',
      comment: 'The webhooks entry (and what it shares with the WebCrypto one) loads no HTTP client.',
      severity: 'error',
      from: { path: entry('client', CLIENT_WEBHOOKS) },
      to: { path: '^client/', pathNot: entry('client', CLIENT_WEBHOOKS) },
    },
    {
      name: 'client-imports-no-node-built-in',
      comment: 'Browser and worker bundles take every client module but the Node entries: none may import node:.',
      severity: 'error',
      from: { path: '^client/', pathNot: '^client/(dist/)?(index|webhooks)\\.(ts|js)$' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'server-takes-only-the-client-webhooks',
      comment: 'The server signs with the client’s webhooks entry; it uses nothing else of the client.',
      severity: 'error',
      from: { path: '^server/' },
      to: { path: '^client/', pathNot: entry('client', CLIENT_WEBHOOKS) },
    },
    {
      name: 'suite-never-imports-the-server',
      comment: 'The suite reaches a target only through its public API, its webhooks and an adapter.',
      severity: 'error',
      from: { path: '^conformance/' },
      to: { path: '^server/' },
    },
    {
      name: 'core-stands-alone',
      comment: 'core/ is what every part of the suite shares: it imports nothing of the suite but itself.',
      severity: 'error',
      from: { path: '^conformance/(dist/)?core/' },
      to: { path: '^conformance/', pathNot: '^conformance/(dist/)?core/' },
    },
    {
      name: 'runner-knows-no-mode',
      comment: 'The runner judges and reports the checks of any mode: it imports no mode, and the reporters no runner.',
      severity: 'error',
      from: { path: '^conformance/(dist/)?(runner|reporters|rules|adapters)/' },
      to: { path: '^conformance/(dist/)?(modes/|program|index|traceability|cli)' },
    },
    {
      name: 'modes-stay-apart',
      comment: 'A mode (run, receiver, client) shares with the others only through the parts below modes/.',
      severity: 'error',
      from: { path: '^conformance/(?:dist/)?modes/([^/]+)/' },
      to: { path: '^conformance/(?:dist/)?modes/', pathNot: '^conformance/(?:dist/)?modes/$1/' },
    },
    {
      name: 'exploration-model-is-pure',
      comment:
        'The model of the document (and its inputs) does no I/O: it imports only the adapter’s types, the configuration table’s rule and its own parts, no built-in, no package.',
      severity: 'error',
      from: { path: '^conformance/(dist/)?modes/run/explore/(model|model-[a-z]+|inputs)\\.(ts|js)$' },
      to: {
        pathNot: [
          '^conformance/(dist/)?core/adapter\\.(ts|js|d\\.ts)$',
          '^conformance/(dist/)?rules/configuration\\.(ts|js|d\\.ts)$',
          '^conformance/(dist/)?modes/run/explore/(model|model-[a-z]+|inputs)\\.(ts|js|d\\.ts)$',
        ],
      },
    },
    {
      name: 'rules-stand-alone',
      comment: 'A rule’s predicate lives once: the checks and the exploration import rules/, never the reverse.',
      severity: 'error',
      from: { path: '^conformance/(dist/)?rules/' },
      to: {
        path: '^conformance/',
        pathNot: ['^conformance/(dist/)?rules/', '^conformance/(dist/)?core/(json|exchange|adapter)\\.(ts|js|d\\.ts)$'],
      },
    },
    {
      name: 'exploration-takes-nothing-from-the-checks',
      comment:
        'What the exploration shares with the hand-written checks lives in rules/ (or the context), not in a check file.',
      severity: 'error',
      from: { path: '^conformance/(dist/)?modes/run/explore/' },
      to: { path: '^conformance/(dist/)?modes/run/checks/' },
    },
    {
      name: 'packages-import-no-tests-or-tools',
      severity: 'error',
      from: { path: '^(server|conformance)/' },
      to: { path: '^(test|scripts|bench|examples)/' },
    },
    {
      name: 'domain-knows-no-http',
      severity: 'error',
      from: { path: '^server/domain/' },
      to: {
        path: ['^server/(http|handlers|pay|docs|sandbox|webhooks|background)/', 'node_modules/(koa|@koa)/'],
      },
    },
    {
      name: 'storage-through-the-store-contract',
      comment: 'domain/ and handlers/ reach storage only through store/types.ts.',
      severity: 'error',
      from: { path: '^server/(domain|handlers)/' },
      to: { path: '^server/store/', pathNot: '^server/store/types\\.ts$' },
    },
    {
      name: 'database-drivers-only-in-the-store',
      severity: 'error',
      from: { path: '^server/', pathNot: '^server/store/' },
      to: { path: 'node_modules/(better-sqlite3|pg|kysely)/' },
    },
    {
      name: 'sandbox-only-from-the-composition',
      comment: 'The test controls are wired in by the composition root, nowhere else.',
      severity: 'error',
      from: { path: '^server/', pathNot: ['^server/app\\.ts$', '^server/sandbox/'] },
      to: { path: '^server/sandbox/' },
    },
    {
      name: 'http-is-handed-its-handlers-and-pages',
      comment:
        'The HTTP layer serves what the composition root hands it: the operations’ handlers and the docs’ pages.',
      severity: 'error',
      from: { path: '^server/http/' },
      to: { path: '^server/(handlers|sandbox|docs)/' },
    },
    {
      name: 'store-stands-alone',
      comment: 'Storage imports nothing else of the server: what it needs of the background thread it defines itself.',
      severity: 'error',
      from: { path: '^server/store/' },
      to: { path: '^server/', pathNot: '^server/store/' },
    },
    {
      name: 'examples-use-the-client-as-merchants-do',
      severity: 'error',
      from: { path: '^examples/' },
      to: { path: '^(server|conformance|test|scripts|bench)/' },
    },
  ],
  options: {
    // The built entries other packages resolve to are leaves: their sources are checked instead.
    doNotFollow: { path: ['node_modules', '(^|/)dist/'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.tools.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'types', 'default'] },
  },
};
