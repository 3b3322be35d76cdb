/**
 * Import boundaries of the project's design ("What may import what" in the shared DESIGN.md, summed up
 * in docs/development.md), checked by `npm run boundaries` and in CI. A rule here is the
 * design's rule: change the design first, then this file.
 * @type {import('dependency-cruiser').IConfiguration}
 */
module.exports = {
  forbidden: [
    {
      name: 'no-import-cycles',
      comment:
        'Modules form layers: an import circle means two modules hold one role between them. The emulator is left out.',
      severity: 'error',
      from: { pathNot: '^src/sandbox/' },
      to: { circular: true },
    },
    {
      name: 'destinations-take-shaped-rows',
      comment:
        'A destination writes rows the normalize stage shaped (layouts, record shaping, cell values, table ' +
        'definitions); it never reaches the table shaper, which knows manifests.',
      severity: 'error',
      from: { path: '^src/destinations/' },
      to: {
        path: '^src/normalize/',
        pathNot: '^src/normalize/(record-shaper|table-layout|cell-values|table-definition)[.]ts$',
      },
    },
    {
      name: 'normalize-and-load-never-import-engine',
      comment: 'Shaping records and loading them serve the engine, the webhook receiver and rejected retries alike.',
      severity: 'error',
      from: { path: '^src/(normalize|load)/' },
      to: { path: '^src/(engine|cli|config|client|webhooks|signals|scheduler|report|airbyte)/' },
    },
    {
      name: 'schemas-import-only-zod',
      comment: 'schemas/ holds the API resources as zod schemas: it imports zod and other schemas, nothing else.',
      severity: 'error',
      from: { path: '^schemas/' },
      to: { pathNot: ['^schemas/', '^node_modules/zod/'] },
    },
    {
      name: 'util-imports-nothing-of-ours',
      comment: 'src/util is the bottom layer: any module may use it, it uses no module of seedline.',
      severity: 'error',
      from: { path: '^src/util/' },
      to: { path: '^(src|schemas)/', pathNot: '^src/util/' },
    },
    {
      name: 'destinations-never-import-engine-or-client',
      comment: 'A destination stores what it is given; it knows nothing of how it was fetched.',
      severity: 'error',
      from: { path: '^src/destinations/' },
      to: { path: '^src/(engine|client|cli|manifest|config|sandbox|signals|webhooks|scheduler|report|airbyte)/' },
    },
    {
      name: 'duckdb-never-imports-postgres',
      severity: 'error',
      from: { path: '^src/destinations/duckdb/' },
      to: { path: '^src/destinations/postgres/' },
    },
    {
      name: 'postgres-never-imports-duckdb',
      severity: 'error',
      from: { path: '^src/destinations/postgres/' },
      to: { path: '^src/destinations/duckdb/' },
    },
    {
      name: 'only-a-backend-loads-its-driver',
      comment: 'Drivers are loaded by their backend folder alone, so a run loads only the driver it uses.',
      severity: 'error',
      from: { pathNot: '^src/destinations/(duckdb|postgres)/' },
      to: { path: '^node_modules/(@duckdb/|pg/|pg-copy-streams/)', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'sandbox-never-imports-client-or-engine',
      comment: 'The emulator is written apart from the client, so a client bug cannot hide behind the same bug in it.',
      severity: 'error',
      from: { path: '^src/sandbox/' },
      to: { path: '^src/', pathNot: '^src/(sandbox|util)/' },
    },
    {
      name: 'config-never-imports-engine',
      severity: 'error',
      from: { path: '^src/config/' },
      to: { path: '^src/(engine|cli|destinations/(duckdb|postgres))/' },
    },
    {
      name: 'engine-reaches-destinations-through-the-interface',
      comment: 'The engine talks to a destination through destination.ts, never to a backend.',
      severity: 'error',
      from: { path: '^src/engine/' },
      to: { path: '^src/destinations/(duckdb|postgres|sql)/' },
    },
    {
      name: 'engine-runs-compiled-components',
      comment:
        'The engine gets compiled streams (manifest/compile-stream.ts and its components): it never renders a ' +
        "manifest's templates or reads a manifest node itself.",
      severity: 'error',
      from: { path: '^src/engine/' },
      to: {
        path: '^src/manifest/',
        pathNot: '^src/manifest/(compile-stream|manifest-error)[.]ts$|^src/manifest/components/',
      },
    },
    {
      name: 'signals-and-webhooks-never-import-engine',
      severity: 'error',
      from: { path: '^src/(signals|webhooks)/' },
      to: { path: '^src/(engine|cli)/' },
    },
    {
      name: 'only-cli-wires-everything',
      comment: 'cli/ is the top layer: nothing below it imports it.',
      severity: 'error',
      from: { path: '^(src|schemas)/', pathNot: '^src/cli/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'commands-load-heavy-modules-when-run',
      comment:
        'The entry point and the files that register a command load nothing heavy until a command runs ' +
        '(`seedline --help` starts at once): the rest comes through `await import()` in the action.',
      severity: 'error',
      from: { path: '^src/cli/(main|program|[a-z-]+-command)[.]ts$' },
      to: {
        dynamic: false,
        dependencyTypesNot: ['type-only'],
        pathNot: [
          '^node_modules/(commander|pino)/',
          '^src/cli/(run-command|json-output|listen-options|format-table|help-examples|airbyte-protocol)[.]ts$',
          '^src/cli/(duckdb-allocator|heap-growth)[.]ts$',
          '^src/cli/[a-z-]+-command[.]ts$',
          '^src/util/(log|package-root|redact-secrets|wrap-text)[.]ts$',
          '^src/airbyte/airbyte-messages[.]ts$',
        ],
      },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^(src|schemas|node_modules)/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
