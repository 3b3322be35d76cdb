import { randomBytes } from 'node:crypto';

/** Generates ids: `prefix_` + random hex for resources, a cheap counter for request ids. */
export class IdGenerator {
  private readonly instance = randomBytes(4).toString('hex');
  private counter = 0;

  /** A request id, unique per sandbox instance. */
  request(): string {
    return `req_${this.instance}${(this.counter++).toString(36).padStart(6, '0')}`;
  }

  /** A resource id such as `job_…`, `sig_…`, `trg_…`, `wh_…`. */
  resource(prefix: string): string {
    return `${prefix}_${randomBytes(10).toString('hex')}`;
  }
}
