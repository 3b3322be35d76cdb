import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createReporter } from '../../src/cli/progress-reporter.js';
import { wrapText } from '../../src/util/wrap-text.js';

const NOTICE =
  'https://www.network.example/company/acme-analytics: 25 postings came back, as many as max_results allows, and the service pages no further, so older open postings may be missing. Raise streams.jobs.max_results (at most 100): the next run then asks again from the last complete pass.';

/** A 60-column terminal that keeps what is written to it. */
function terminal(columns: number): NodeJS.WriteStream & { text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write: (chunk, _enc, done) => (chunks.push(String(chunk)), done()),
  }) as unknown as NodeJS.WriteStream & { text: () => string };
  Object.assign(stream, {
    isTTY: true,
    columns,
    rows: 40,
    cursorTo: () => true,
    moveCursor: () => true,
    clearLine: () => true,
    clearScreenDown: () => true,
    text: () => chunks.join(''),
  });
  return stream;
}

describe('notices on a narrow terminal', () => {
  it('given a notice longer than the width, when wrapped, then every line fits and no word is lost', () => {
    const wrapped = wrapText(NOTICE, 60);
    expect(wrapped.split('\n').every((line) => line.length <= 60)).toBe(true);
    expect(wrapped.replace(/\n +/g, ' ')).toBe(NOTICE);
  });

  it('given progress bars on a 60-column terminal, when a stream reports a long notice, then the whole notice is written in lines that fit', () => {
    const out = terminal(60);
    const reporter = createReporter(out);
    reporter.streamStarted('jobs', 3);
    reporter.notice('jobs', NOTICE);
    reporter.streamProgress('jobs', { done: 1, credits: 25 });
    reporter.streamFinished({
      stream: 'jobs',
      status: 'succeeded',
      records: 25,
      rows: 25,
      skipped: 0,
      failed: 0,
      rejected: 0,
      credits: 25,
      creditsAtRisk: 0,
      errors: [],
      estimatedCredits: 25,
      worstCaseCredits: 25,
    });
    const written = out.text().replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');
    const noticeLines = written.split(/\r?\n/).filter((line) => !line.includes('|') && line.trim() !== '');
    expect(noticeLines.every((line) => line.length <= 60)).toBe(true);
    expect(noticeLines.join(' ').replace(/\s+/g, ' ')).toContain(`[jobs] ${NOTICE}`.replace(/\s+/g, ' '));
  });
});
