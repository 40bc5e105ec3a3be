/* How the software NIC's segment is made and found: an anonymous segment that
 * other processes reopen through /proc and that never has a name, the named
 * one whose last attacher removes the name, and a rank marking itself failed. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nic/softnic.h"
#include "unit.h"

/* Entries of /dev/shm whose name starts with `prefix`. */
static int shm_count(const char *prefix)
{
    DIR *d = opendir("/dev/shm");
    if (NULL == d) {
        return -1;
    }
    int n = 0;
    for (struct dirent *e; NULL != (e = readdir(d));) {
        n += 0 == strncmp(e->d_name, prefix, strlen(prefix));
    }
    closedir(d);
    return n;
}

/* Does this process map a segment whose /proc/self/maps entry contains `what`? */
static int mapped_as(const char *what)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (NULL == f) {
        return 0;
    }
    char line[512];
    int found = 0;
    while (!found && NULL != fgets(line, sizeof(line), f)) {
        found = NULL != strstr(line, what);
    }
    fclose(f);
    return found;
}

/* Fork a child (as another user when drop_to_uid is not 0) that attaches as
 * rank 1 through our descriptor and poisons the segment naming itself. Returns
 * 'y' attached, 'r' refused (EACCES/EPERM), 'n' another failure. */
static char child_attach_anon(int pid, int fd, int size, uint32_t drop_to_uid)
{
    int ready[2];
    if (0 != pipe(ready)) {
        return '?';
    }
    fflush(NULL);
    pid_t child = fork();
    if (0 == child) {
        close(ready[0]);
        if (0 != drop_to_uid && 0 != setuid(drop_to_uid)) {
            _exit(3);
        }
        ofl_softnic_t b;
        int rc = ofl_softnic_attach_anon(&b, pid, fd, size, 1, 2, 100);
        char c = 0 == rc ? 'y' : (-EACCES == rc || -EPERM == rc) ? 'r' : 'n';
        if (0 == rc) {
            /* Prove it is the same memory: the poison word the parent reads. */
            ofl_softnic_poison_self(&b);
            ofl_softnic_detach(&b);
        }
        if (1 != write(ready[1], &c, 1)) {
            _exit(3);
        }
        _exit(0);
    }
    close(ready[1]);
    char c = '?';
    if (child < 0 || 1 != read(ready[0], &c, 1)) {
        c = '?';
    }
    close(ready[0]);
    waitpid(child, NULL, 0);
    return c;
}

static void test_anon(void)
{
    ofl_softnic_t a;
    int fd = -1;
    int rc = ofl_softnic_create_anon(&a, &fd, 2, 0, 2, 100);
    CHECK(0 == rc && fd >= 0, "anonymous create: rc %d fd %d", rc, fd);
    if (0 != rc) {
        return;
    }
    /* What the kernel says the mapping is: a memfd, no file of /dev/shm. */
    CHECK(mapped_as("/memfd:coll_offload"), "not mapped as a memfd");
    CHECK(!mapped_as("/dev/shm/"), "mapped from /dev/shm");
    CHECK(-1 == a.base.ops->poisoned(&a.base), "fresh segment poisoned");
    CHECK('y' == child_attach_anon((int) getpid(), fd, 2, 0), "child could not attach");
    /* The child poisoned the segment naming itself (rank 1): shared memory. */
    CHECK(1 == a.base.ops->poisoned(&a.base), "child's poison not seen: %d",
          a.base.ops->poisoned(&a.base));
    /* Geometry must match, as for named segments. */
    ofl_softnic_t b;
    CHECK(-EINVAL == ofl_softnic_attach_anon(&b, (int) getpid(), fd, 3, 1, 2, 100),
          "attach with another size");
    CHECK(-ENOENT == ofl_softnic_attach_anon(&b, (int) getpid(), 1000000, 2, 1, 2, 100),
          "attach to a descriptor that does not exist");
    if (0 == geteuid()) {
        /* Another user may not reopen our descriptors: the caller's cue to fall
         * back to a named segment. */
        CHECK('r' == child_attach_anon((int) getpid(), fd, 2, 65534),
              "another user's attach was not refused");
    }
    close(fd);
    ofl_softnic_detach(&a);
}

static void test_named_last_unlinks(void)
{
    char name[64];
    snprintf(name, sizeof(name), "/coll_offload.unit.%d", (int) getpid());
    ofl_softnic_t m[3];
    CHECK(0 == ofl_softnic_create(&m[0], name, 3, 0, 2, 100), "create");
    CHECK(1 == shm_count(name + 1), "named segment missing");
    CHECK(0 == ofl_softnic_attach_unlink(&m[1], name, 3, 1, 2, 100), "first attach");
    CHECK(1 == shm_count(name + 1), "name gone before the last attach");
    CHECK(0 == ofl_softnic_attach_unlink(&m[2], name, 3, 2, 2, 100), "last attach");
    CHECK(0 == shm_count(name + 1), "the last attach left the name");
    CHECK(-ENOENT == ofl_softnic_unlink(name), "creator's unlink after the last attach");
    for (int r = 0; r < 3; ++r) {
        ofl_softnic_detach(&m[r]);
    }
    ofl_softnic_unlink(name);
    /* A failed attach (other geometry) does not count as one. */
    ofl_softnic_t a, b;
    CHECK(0 == ofl_softnic_create(&a, name, 2, 0, 2, 100), "create again");
    CHECK(-EINVAL == ofl_softnic_attach_unlink(&b, name, 2, 1, 1, 100), "attach other slots");
    CHECK(1 == shm_count(name + 1), "a failed attach removed the name");
    CHECK(0 == ofl_softnic_attach_unlink(&b, name, 2, 1, 2, 100), "attach");
    CHECK(0 == shm_count(name + 1), "name left after the only attach");
    ofl_softnic_detach(&a);
    ofl_softnic_detach(&b);
    ofl_softnic_unlink(name);   /* whatever the checks said, leave nothing */
}

int main(void)
{
    test_anon();
    test_named_last_unlinks();
    return unit_report("test_softnic");
}
