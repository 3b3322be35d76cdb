import { describe, expect, it } from 'vitest';
import { keyHash, SetSketch } from '../../src/airbyte/set-sketch.js';

const hashes = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => keyHash(`${prefix}-${i}`));

describe('SetSketch', () => {
  it('given a sketch of one set with another set taken out, when peeled, then it gives exactly the keys each lacks', () => {
    const kept = hashes('kept', 500);
    const removed = hashes('removed', 40);
    const added = hashes('added', 30);
    const stored = new SetSketch(240);
    for (const key of [...kept, ...removed]) stored.add(key);
    const sketch = SetSketch.fromBytes(stored.toBytes(), 240);
    for (const key of [...kept, ...added]) sketch.add(key, -1);
    const changes = sketch.peel();
    expect(changes?.plus.sort()).toEqual([...removed].sort());
    expect(changes?.minus.sort()).toEqual([...added].sort());
  });

  it('given more differences than its cells hold, when peeled, then it says it cannot tell rather than guess', () => {
    const sketch = new SetSketch(30);
    for (const key of hashes('many', 200)) sketch.add(key);
    expect(sketch.peel()).toBeUndefined();
  });

  it('given equal sets, when peeled, then nothing changed', () => {
    const keys = hashes('same', 1000);
    const sketch = new SetSketch(3);
    for (const key of keys) sketch.add(key);
    for (const key of keys) sketch.add(key, -1);
    expect(sketch.peel()).toEqual({ plus: [], minus: [] });
  });

  it('given a cell count that is not a multiple of 3, when built, then it is refused', () => {
    expect(() => new SetSketch(10)).toThrow(/multiple of 3/);
  });
});
