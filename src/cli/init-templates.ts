/** The warehouse a config written by `seedline init` loads into. */
export type InitDestination = { type: 'duckdb' } | { type: 'postgres'; url: string };

/** What `seedline init` writes: each file's path relative to the folder, and its text. */
export interface InitFiles {
  /** File name → text, in the order they are written and listed. */
  files: ReadonlyMap<string, string>;
}

/** The Postgres URL a config starts from when none is given: this machine's server, its default database. */
export const DEFAULT_POSTGRES_URL = 'postgres://127.0.0.1:5432/postgres';

/** The name of the config `seedline init` writes. */
export const INIT_CONFIG_FILE = 'seedline.yaml';

/**
 * The files of a starter project: a commented config that runs at once against the embedded
 * sandbox, two seed CSVs and a `.env` example.
 * @param schemaPath the config JSON Schema's path as the config's folder sees it (for editors), if any.
 */
export function initFiles(destination: InitDestination, schemaPath: string | undefined): InitFiles {
  return {
    files: new Map([
      [INIT_CONFIG_FILE, configText(destination, schemaPath)],
      ['seeds/profiles.csv', PROFILES_CSV],
      ['seeds/companies.csv', COMPANIES_CSV],
      ['.env.example', envExample(destination)],
    ]),
  };
}

function configText(destination: InitDestination, schemaPath: string | undefined): string {
  const editorLine = schemaPath === undefined ? '' : `# yaml-language-server: $schema=${schemaPath}\n`;
  return `${editorLine}# Written by \`seedline init\`. As it is, it runs against the embedded sandbox of the service
# (no account, no network needed): \`seedline plan --config ${INIT_CONFIG_FILE}\`, then \`seedline sync\`.
# Variables come from the environment, or from a .env file beside this one (see .env.example).
api:
  base_url: sandbox                      # the embedded emulator; for the real service, its https address:
  # base_url: \${SEEDLINE_BASE_URL}
  api_key: \${SEEDLINE_API_KEY:-svc_test_starter}   # the sandbox takes any svc_test_ key; put your real key in .env

${destinationText(destination)}
seeds:                                   # what to fetch; paths are relative to this file
  profiles: { file: seeds/profiles.csv, column: url }
  companies: { file: seeds/companies.csv, column: url }
  # posts: { sql: "select url from crm.posts_to_watch" }   # seeds may also be a query on the warehouse

streams:                                 # a stream runs when its key is here
  profiles: { refresh_after: 7d }        # a profile loaded within 7 days is not bought again
  companies: { refresh_after: 30d }
  account: {}                            # the account's balance and limits (free)
  # jobs: { keywords: [data engineer], max_results: 25 }
  # activity: { kinds: [posts], posted_within: month, max_pages: 1 }

budget:
  max_credits_per_run: 100               # a run never spends more (\`seedline plan\` prints the worst case first)
  # max_credits_per_month: 5000
  # keep_balance: 1000                   # never let the account's balance fall below this

# schedule:                              # \`seedline schedule --config ${INIT_CONFIG_FILE}\` runs these until stopped
#   nightly: { cron: "30 2 * * *", streams: [profiles, companies] }
`;
}

function destinationText(destination: InitDestination): string {
  if (destination.type === 'postgres')
    return `destination:                             # your Postgres; seedline creates the schema and its tables
  type: postgres
  url: \${SEEDLINE_PG_URL:-${destination.url}}
  schema: seedline
  # or a DuckDB file: { type: duckdb, path: warehouse.duckdb, schema: seedline }
`;
  return `destination:                             # a DuckDB file beside this config, made on the first sync
  type: duckdb
  path: warehouse.duckdb
  schema: seedline
  # or Postgres: { type: postgres, url: "\${SEEDLINE_PG_URL}", schema: seedline }
`;
}

function envExample(destination: InitDestination): string {
  const postgres =
    destination.type === 'postgres'
      ? `# The Postgres the config loads into (default: ${destination.url}).\n# SEEDLINE_PG_URL=postgres://user:password@db.internal:5432/warehouse\n`
      : '';
  return `# Copy to .env beside seedline.yaml: seedline reads it when it loads the config.
# A variable already set in the environment wins over this file. Keep .env out of version control.

# Your key for the real service (svc_live_…); until set, the sandbox's test key is used.
# SEEDLINE_API_KEY=svc_live_your_key_here
# The service's address, once api.base_url in seedline.yaml reads \${SEEDLINE_BASE_URL}.
# SEEDLINE_BASE_URL=https://api.example.com
${postgres}`;
}

// Seeds the sandbox knows: each sync of them succeeds.
const PROFILES_CSV = `url
https://www.network.example/in/ada-lovelace
https://www.network.example/in/grace-hopper
https://www.network.example/in/alan-turing
`;

const COMPANIES_CSV = `url
https://www.network.example/company/acme-analytics
https://www.network.example/company/globex
`;
