/* Loads librmw_tracer.so by name, as rmw_implementation does (the loader finds it on
 * LD_LIBRARY_PATH), resolves every entry point named on stdin, one per line, and asks the
 * library who it is. Exit 0 only if all resolved; every missing name is printed. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef const char *(*identifier_fn)(void);

int main(int argc, char **argv) {
  const char *name = argc > 1 ? argv[1] : "librmw_tracer.so";
  /* RTLD_NOW: an undefined symbol anywhere in the library fails here, not at first call. */
  void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "dlopen(%s) failed: %s\n", name, dlerror());
    return 2;
  }
  char line[256];
  int total = 0, missing = 0;
  while (fgets(line, sizeof line, stdin) != NULL) {
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0] == '\0' || line[0] == '#') {
      continue;
    }
    total++;
    dlerror();
    void *sym = dlsym(lib, line);
    const char *err = dlerror();
    if (sym == NULL || err != NULL) {
      printf("missing: %s\n", line);
      missing++;
    }
  }
  printf("resolved %d of %d\n", total - missing, total);
  identifier_fn ident = (identifier_fn)dlsym(lib, "rmw_get_implementation_identifier");
  identifier_fn format = (identifier_fn)dlsym(lib, "rmw_get_serialization_format");
  if (ident != NULL) {
    const char *id = ident();
    printf("identifier: %s\n", id ? id : "(null)");
  }
  if (format != NULL) {
    const char *f = format();
    printf("serialization format: %s\n", f ? f : "(null)");
  }
  if (dlclose(lib) != 0) {
    fprintf(stderr, "dlclose failed: %s\n", dlerror());
    return 3;
  }
  return missing == 0 ? 0 : 1;
}
