/* libbench_allocs.so: counts a process's malloc, calloc, realloc, posix_memalign and
 * aligned_alloc calls and prints "bench_allocs: pid N: K allocations" on stderr at exit. Preload
 * it before the rmw (LD_PRELOAD=target/bench/libbench_allocs.so:target/release/librmw_tracer.so)
 * and run a pair twice with different iteration counts: the difference over the extra round
 * trips is the allocations per round trip on the steady path (tools/bench/README.md).
 *
 * dlsym itself may allocate before the real functions are known: those few requests are served
 * from a static arena and never freed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static atomic_ulong count;
static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void (*real_free)(void *);

static _Alignas(16) char arena[64 * 1024];
static size_t arena_used;
static int resolving;

static void *from_arena(size_t n) {
  size_t at = arena_used;
  arena_used += (n + 15) & ~(size_t)15;
  if (arena_used > sizeof arena) return NULL;
  return memset(arena + at, 0, n);
}

static void resolve(void) {
  if (real_free || resolving) return;
  resolving = 1;
  real_malloc = dlsym(RTLD_NEXT, "malloc");
  real_calloc = dlsym(RTLD_NEXT, "calloc");
  real_realloc = dlsym(RTLD_NEXT, "realloc");
  real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
  real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
  real_free = dlsym(RTLD_NEXT, "free");
  resolving = 0;
}

void *malloc(size_t n) {
  resolve();
  if (!real_malloc) return from_arena(n);
  count++;
  return real_malloc(n);
}

void *calloc(size_t a, size_t b) {
  resolve();
  if (!real_calloc) return from_arena(a * b);
  count++;
  return real_calloc(a, b);
}

void *realloc(void *p, size_t n) {
  resolve();
  count++;
  return real_realloc(p, n);
}

int posix_memalign(void **out, size_t align, size_t n) {
  resolve();
  count++;
  return real_posix_memalign(out, align, n);
}

void *aligned_alloc(size_t align, size_t n) {
  resolve();
  count++;
  return real_aligned_alloc(align, n);
}

void free(void *p) {
  if ((char *)p >= arena && (char *)p < arena + sizeof arena) return;
  resolve();
  real_free(p);
}

__attribute__((destructor)) static void report(void) {
  char line[96];
  int n = snprintf(line, sizeof line, "bench_allocs: pid %d: %lu allocations\n", (int)getpid(),
                   (unsigned long)count);
  if (n > 0) (void)!write(2, line, (size_t)n);
}
