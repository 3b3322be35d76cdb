import { describeCrashHarness } from '../helpers/crash-harness-suite.js';

// Trials on Postgres; the other backend's are in their own file, so two workers run them at once.
describeCrashHarness('postgres');
