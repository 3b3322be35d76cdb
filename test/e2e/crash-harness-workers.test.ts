import { describeCrashHarness, WORKER } from '../helpers/crash-harness-suite.js';

// Trials of `seedline worker` on Postgres (the only backend workers share): the reference is a sync.
describeCrashHarness('postgres', WORKER);
