import type { Router } from '../router.js';

/** Signal, trigger and usage routes. */
export function registerSignalRoutes(_router: Router): void {}
