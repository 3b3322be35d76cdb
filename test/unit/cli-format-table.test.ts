import { describe, expect, it } from 'vitest';
import { formatTable } from '../../src/cli/format-table.js';

describe('formatTable', () => {
  it('given a long cell with a newline before the cut, when rendered, then every row stays one line of the same width', () => {
    const about = `${'a'.repeat(20)}\n${'b'.repeat(20)}\t${'c'.repeat(40)}`;
    const lines = formatTable([
      { name: 'jane', about },
      { name: 'joe', about: 'short' },
    ]).split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[2]).toBe(`jane  ${'a'.repeat(20)} ${'b'.repeat(20)} ${'c'.repeat(15)}...`);
    expect(lines[2]).toHaveLength(6 + 60);
    expect(lines[3]).toBe('joe   short');
  });

  it('given a short cell with newlines and tabs, when rendered, then they become single spaces', () => {
    const lines = formatTable([{ headline: 'CTO\n\tat  Acme\r\n' }]).split('\n');
    expect(lines).toEqual(['headline', '-----------', 'CTO at Acme']);
  });

  it('given numbers, when rendered, then they are right-aligned under their header', () => {
    expect(formatTable([{ credits: 5 }, { credits: 1200 }]).split('\n')).toEqual([
      'credits',
      '-------',
      '      5',
      '   1200',
    ]);
  });
});
