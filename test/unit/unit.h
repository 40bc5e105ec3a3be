/* Minimal assertion helpers for the unit tests: count checks, report failures
 * with file:line, exit non-zero when anything failed. */
#ifndef OFL_UNIT_H
#define OFL_UNIT_H
#include <stdio.h>
#include <stdlib.h>

static int unit_checks;
static int unit_failures;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        unit_checks++;                                                          \
        if (!(cond)) {                                                          \
            unit_failures++;                                                    \
            if (unit_failures <= 50) {                                          \
                fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, \
                        #cond);                                                 \
                fprintf(stderr, __VA_ARGS__);                                   \
                fputc('\n', stderr);                                            \
            }                                                                   \
        }                                                                       \
    } while (0)

static inline int unit_report(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, unit_checks, unit_failures);
    return unit_failures ? EXIT_FAILURE : EXIT_SUCCESS;
}
#endif
