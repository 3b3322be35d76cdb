import type { Command } from 'commander';
import { planSync, prepareSync } from '../engine/pipeline.js';
import { loadManifests } from '../manifest/load-manifests.js';
import { formatTable } from './format-table.js';
import { openSession } from './open-session.js';
import { runCommand } from './run-command.js';
import { splitList } from './sync-command.js';

/** `seedline plan`: what a sync would fetch and its worst-case credits, without any call. */
export function registerPlanCommand(program: Command): void {
  program
    .command('plan')
    .description('Show what a sync would fetch now and its estimated credits, without calling the service')
    .requiredOption('-c, --config <file>', 'config file (YAML)')
    .option('--streams <names>', 'only these streams, comma-separated')
    .option('--full-refresh', 'plan a full refresh', false)
    .action((opts: { config: string; streams?: string; fullRefresh: boolean }) =>
      runCommand(async () => {
        const manifests = await loadManifests();
        const session = await openSession(opts.config);
        try {
          const { loaded, destination } = session;
          const prepared = await prepareSync({ config: loaded.config, baseDir: loaded.baseDir, manifests, destination, only: splitList(opts.streams), fullRefresh: opts.fullRefresh });
          const plans = await planSync(prepared);
          const total = plans.reduce((n, p) => n + p.estimatedCredits, 0);
          const budget = session.loaded.config.budget.max_credits_per_run;
          process.stdout.write(
            `${formatTable(plans.map((p) => ({ stream: p.stream, to_fetch: p.units, resumed: p.resumed, fresh_skipped: p.skipped, est_credits: p.estimatedCredits })))}\n` +
              `\nestimated credits: up to ${total} (paged streams: first page only)` +
              (budget === undefined ? ', no budget set' : `, budget ${budget} per run${total > budget ? ': the run will stop at the budget' : ''}`) +
              '\n',
          );
        } finally {
          await session.close();
        }
      }),
    );
}
