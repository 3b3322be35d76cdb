/** Seeds of the report's tests: `private-dennis-ritchie` is a private profile, so its seed fails. */
export const REPORT_SEEDS = {
  profiles: ['ada-lovelace', 'grace-hopper', 'private-dennis-ritchie', 'alan-turing'],
  companies: ['acme-analytics', 'globex', 'initech'],
};

/** The config of a sync that fails a seed (private-…) and stops at the budget. */
export const REPORT_CONFIG = {
  seeds: REPORT_SEEDS,
  streams: { profiles: {}, companies: {}, account: {} },
  budget: { max_credits_per_run: 6 },
  webhooks: { secrets: ['whsec_report_test'], port: 0 },
};

/** A config that draws every section of the page: job postings too, and a monthly budget line. */
export const REPORT_PAGE_CONFIG = {
  ...REPORT_CONFIG,
  streams: { ...REPORT_CONFIG.streams, jobs: { max_results: 5 } },
  budget: { max_credits_per_month: 5000 },
};
