#ifndef GATTD_CPSEUDOTERMINAL_H
#define GATTD_CPSEUDOTERMINAL_H

#include <stddef.h>
#include <sys/types.h>

/// Opens a pseudoterminal (posix_openpt, grantpt, unlockpt) of `rows` x `cols`: the master's
/// descriptor (close-on-exec), the slave's path in `slave`; -errno on failure.
int gattd_pty_open(char *slave, size_t size, unsigned short rows, unsigned short cols);

/// Runs `argv[0]` (an absolute path) in a new session whose controlling terminal, stdin,
/// stdout and stderr are the pty `slave`, with every signal at its default and none blocked,
/// and no other descriptor inherited. 0 and `*pid`, or the errno (ENOENT: no such program).
int gattd_pty_spawn(const char *slave, char *const argv[], char *const envp[], pid_t *pid);

/// Runs `argv[0]` (an absolute path) in a process group of its own with stdin, stdout and
/// stderr on new pipes (`fds`: gattd's ends, close-on-exec: write, read, read), every signal
/// at its default and no other descriptor inherited. 0 and `*pid`, or the errno.
int gattd_spawn_piped(char *const argv[], char *const envp[], pid_t *pid, int fds[3]);

#endif
