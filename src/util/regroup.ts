/**
 * The items of `source`'s chunks again, in chunks of exactly `size` (the last one shorter): a
 * filtered or differently chunked source still gives full chunks, holding at most two at once.
 */
export async function* regroup<T>(source: AsyncIterable<readonly T[]>, size: number): AsyncGenerator<T[]> {
  let pending: T[] = [];
  for await (const chunk of source) {
    for (const item of chunk) {
      pending.push(item);
      if (pending.length >= size) {
        yield pending;
        pending = [];
      }
    }
  }
  if (pending.length > 0) yield pending;
}
