#define _GNU_SOURCE
#include "CPseudoTerminal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

int gattd_pty_open(char *slave, size_t size, unsigned short rows, unsigned short cols) {
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (m < 0) return -errno;
    if (grantpt(m) != 0 || unlockpt(m) != 0 || ptsname_r(m, slave, size) != 0) {
        int e = errno;
        close(m);
        return -e;
    }
    struct winsize ws = {.ws_row = rows, .ws_col = cols};
    (void)ioctl(m, TIOCSWINSZ, &ws);
    return m;
}

/// Every signal at its default and none blocked in the child; no descriptor above 2 inherited.
static int child_defaults(posix_spawn_file_actions_t *actions, posix_spawnattr_t *attributes) {
    sigset_t all, none;
    int r = 0;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    r = posix_spawn_file_actions_addclosefrom_np(actions, 3);
#endif
    sigfillset(&all);
    sigemptyset(&none);
    if (r == 0) r = posix_spawnattr_setsigdefault(attributes, &all);
    if (r == 0) r = posix_spawnattr_setsigmask(attributes, &none);
    return r;
}

int gattd_pty_spawn(const char *slave, char *const argv[], char *const envp[], pid_t *pid) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int r = posix_spawn_file_actions_init(&actions);
    if (r != 0) return r;
    r = posix_spawnattr_init(&attributes);
    if (r != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return r;
    }
    // glibc applies POSIX_SPAWN_SETSID before the file actions: opening the slave (without
    // O_NOCTTY) in the new session makes it the controlling terminal.
    if (r == 0) r = posix_spawn_file_actions_addopen(&actions, 0, slave, O_RDWR, 0);
    if (r == 0) r = posix_spawn_file_actions_adddup2(&actions, 0, 1);
    if (r == 0) r = posix_spawn_file_actions_adddup2(&actions, 0, 2);
    if (r == 0) r = child_defaults(&actions, &attributes);
    if (r == 0) r = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    if (r == 0) r = posix_spawn(pid, argv[0], &actions, &attributes, argv, envp);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return r;
}

int gattd_spawn_piped(char *const argv[], char *const envp[], pid_t *pid, int fds[3]) {
    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) != 0) return errno;
    if (pipe2(out, O_CLOEXEC) != 0) {
        int e = errno;
        close(in[0]), close(in[1]);
        return e;
    }
    if (pipe2(err, O_CLOEXEC) != 0) {
        int e = errno;
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        return e;
    }
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int r = posix_spawn_file_actions_init(&actions);
    if (r == 0) r = posix_spawnattr_init(&attributes);
    // dup2 clears close-on-exec on the copies.
    if (r == 0) r = posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    if (r == 0) r = posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    if (r == 0) r = posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    if (r == 0) r = child_defaults(&actions, &attributes);
    if (r == 0) r = posix_spawnattr_setpgroup(&attributes, 0);
    if (r == 0) r = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    if (r == 0) r = posix_spawn(pid, argv[0], &actions, &attributes, argv, envp);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]), close(out[1]), close(err[1]);
    if (r != 0) {
        close(in[1]), close(out[0]), close(err[0]);
        return r;
    }
    fds[0] = in[1];
    fds[1] = out[0];
    fds[2] = err[0];
    return 0;
}
