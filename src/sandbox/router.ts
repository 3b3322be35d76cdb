import type { Handler } from './http.js';

interface PatternRoute {
  method: string;
  regex: RegExp;
  names: string[];
  handler: Handler;
}

/** A route match: the handler and its path parameters. */
export interface RouteMatch {
  handler: Handler;
  params: Record<string, string>;
}

/** Method + path routing: static paths by map lookup, `:param` paths by regex. */
export class Router {
  private readonly exact = new Map<string, Handler>();
  private readonly patterns: PatternRoute[] = [];

  /** Registers `handler` for `method` and a path such as `/v1/batch/:id/results`. */
  add(method: string, path: string, handler: Handler): this {
    if (!path.includes(':')) {
      this.exact.set(`${method} ${path}`, handler);
      return this;
    }
    const names: string[] = [];
    const source = path.replace(/:([a-z_]+)/g, (_, name: string) => {
      names.push(name);
      return '([^/]+)';
    });
    this.patterns.push({ method, regex: new RegExp(`^${source}$`), names, handler });
    return this;
  }

  /** The route of a request, or null. */
  match(method: string, path: string): RouteMatch | null {
    const handler = this.exact.get(`${method} ${path}`);
    if (handler) return { handler, params: {} };
    for (const route of this.patterns) {
      if (route.method !== method) continue;
      const found = route.regex.exec(path);
      if (!found) continue;
      const params: Record<string, string> = {};
      route.names.forEach((name, i) => (params[name] = decodeURIComponent(found[i + 1] as string)));
      return { handler: route.handler, params };
    }
    return null;
  }
}
