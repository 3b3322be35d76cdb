/*
 * A diagnostic for bench/seeds-memory.ts: where a DuckDB sync's anonymous memory is, every 500 ms.
 * libduckdb allocates through its own jemalloc (symbols prefixed duckdb_je_), which no node API
 * reports: this reads jemalloc's own counters through duckdb_je_mallctl, beside the process's
 * RssAnon and glibc's mallinfo2, and writes a line to "$JEPROBE_OUT.<pid>".
 *
 *   gcc -shared -fPIC -O2 -o /tmp/jemalloc-probe.so bench/probes/jemalloc-probe.c -ldl -lpthread
 *   JEPROBE_LIB=$PWD/node_modules/@duckdb/node-bindings-linux-x64/libduckdb.so JEPROBE_OUT=/tmp/probe \
 *     LD_PRELOAD=/tmp/jemalloc-probe.so node dist/bench/seeds-memory.js --profiles 20000,1000000
 *
 * Every process of the run loads it (the sandbox too); only those that load libduckdb write lines.
 * Columns (MB): anon = RssAnon; je_* = jemalloc's allocated, active, resident, metadata, retained;
 * glibc_* = mallinfo2's arena bytes, in use and free (glibc's heap: DuckDB's own malloc, node's
 * and ArrayBuffer backing stores); glibc_mmap = chunks glibc mapped on their own.
 * Not part of seedline: nothing in src/ uses it, and CI never builds it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);

static long rss_anon_mb(void) {
  long kb = 0;
  char line[256];
  FILE *status = fopen("/proc/self/status", "r");
  while (status && fgets(line, sizeof line, status))
    if (!strncmp(line, "RssAnon:", 8)) kb = atol(line + 8);
  if (status) fclose(status);
  return kb / 1024;
}

static size_t je_stat(mallctl_fn mallctl, const char *name) {
  size_t value = 0, size = sizeof value;
  mallctl(name, &value, &size, NULL, 0);
  return value >> 20;
}

static void *sample(void *unused) {
  (void)unused;
  char path[512];
  snprintf(path, sizeof path, "%s.%d", getenv("JEPROBE_OUT"), (int)getpid());
  FILE *out = NULL;
  mallctl_fn mallctl = NULL;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    usleep(500000);
    if (!mallctl) {
      void *lib = dlopen(getenv("JEPROBE_LIB"), RTLD_NOW | RTLD_NOLOAD);
      if (lib) mallctl = (mallctl_fn)dlsym(lib, "duckdb_je_mallctl");
      if (!mallctl) continue;
      out = fopen(path, "w");
      if (!out) return NULL;
    }
    uint64_t epoch = 1;
    size_t size = sizeof epoch;
    mallctl("epoch", &epoch, &size, &epoch, size);
    struct mallinfo2 glibc = mallinfo2();
    clock_gettime(CLOCK_MONOTONIC, &now);
    fprintf(out,
            "%.1f anon=%ld je_allocated=%zu je_active=%zu je_resident=%zu je_metadata=%zu je_retained=%zu "
            "glibc_arena=%zu glibc_inuse=%zu glibc_free=%zu glibc_mmap=%zu\n",
            (double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9, rss_anon_mb(),
            je_stat(mallctl, "stats.allocated"), je_stat(mallctl, "stats.active"), je_stat(mallctl, "stats.resident"),
            je_stat(mallctl, "stats.metadata"), je_stat(mallctl, "stats.retained"), glibc.arena >> 20,
            glibc.uordblks >> 20, glibc.fordblks >> 20, glibc.hblkhd >> 20);
    fflush(out);
  }
  return NULL;
}

__attribute__((constructor)) static void start_sampling(void) {
  if (!getenv("JEPROBE_OUT") || !getenv("JEPROBE_LIB")) return;
  pthread_t thread;
  if (pthread_create(&thread, NULL, sample, NULL) == 0) pthread_detach(thread);
}
