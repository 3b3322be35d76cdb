import { describeCrashHarness, SYNC, WORKER } from '../helpers/crash-harness-suite.js';

// Trials on Postgres, of `seedline sync` and of `seedline worker` (the only backend workers share):
// one file, so both runners' trials share each mode's uninterrupted reference sync. DuckDB's are in
// their own file, so two workers run them at once.
describeCrashHarness('postgres', [SYNC, WORKER]);
