import type { Partition } from '../../manifest/components/partitions.js';
import type { CompiledRequestStream } from '../../manifest/compile-stream.js';
import type { PartitionState } from './partition-pass.js';
import type { StreamContext } from '../stream-context.js';

const DAY_MS = 86_400_000;

/**
 * Says so when a partition's last completed pass is older than the service keeps the stream's
 * records (its manifest's `retention`): what appeared between that pass and the oldest record the
 * service still keeps may be gone for good, and no run can fetch it any more.
 */
export function noticeRetentionGap(
  stream: CompiledRequestStream,
  ctx: StreamContext,
  partition: Partition,
  saved: PartitionState,
): void {
  if (stream.retentionMs === undefined || saved.completed_at === undefined) return;
  const lastMs = Date.parse(saved.completed_at);
  const nowMs = ctx.now().getTime();
  if (!Number.isFinite(lastMs) || nowMs - lastMs <= stream.retentionMs) return;
  const keptFrom = new Date(nowMs - stream.retentionMs).toISOString();
  const kept = Math.round(stream.retentionMs / DAY_MS);
  const where = partition.key === '*' ? '' : `${partition.key}: `;
  ctx.reporter.notice(
    stream.name,
    `${where}the last pass completed ${Math.floor((nowMs - lastMs) / DAY_MS)} days ago (${saved.completed_at}) and the service keeps these records ${kept} days: ` +
      `any from ${saved.completed_at} to ${keptFrom} may be gone for good. Sync ${stream.name} more often than every ${kept} days (a schedule: group).`,
  );
}
