/*
 * l2cap_echo: a program that listens for one of gattd's L2CAP channels through the control
 * socket (the agreed control protocol: {"op":"l2cap_listen","channel":ID}, then one
 * {"event":"l2cap_channel",...} line per channel with the channel's socket attached by
 * SCM_RIGHTS) and echoes every SDU it reads on a channel back on that channel, one child
 * process per channel. Every line gattd sends is printed on stdout. Used by the kernel VM
 * test (Tests/kernel-vm/test.sh); static, since the VM image has no Python.
 *
 *   l2cap_echo CONTROL_SOCKET CHANNEL_ID...
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_FDS 16

static int fds[MAX_FDS];
static int nfds;

/* Echoes SDUs (one SOCK_SEQPACKET message each) until the central closes the channel. */
static void echo(int fd)
{
    char sdu[65536];
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    for (;;) {
        ssize_t n = recv(fd, sdu, sizeof sdu, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            printf("channel fd %d: %s\n", fd, n == 0 ? "closed" : strerror(errno));
            exit(0);
        }
        if (send(fd, sdu, (size_t)n, MSG_NOSIGNAL) != n) {
            printf("channel fd %d: send: %s\n", fd, strerror(errno));
            exit(1);
        }
        printf("channel fd %d: echoed %zd bytes\n", fd, n);
        fflush(stdout);
    }
}

static void line(const char *text)
{
    printf("gattd: %s\n", text);
    fflush(stdout);
    if (!strstr(text, "\"event\":\"l2cap_channel\""))
        return;
    if (nfds == 0) {
        printf("no file descriptor came with the l2cap_channel event\n");
        fflush(stdout);
        return;
    }
    int fd = fds[0];
    memmove(fds, fds + 1, sizeof(int) * (size_t)--nfds);
    pid_t pid = fork();
    if (pid == 0)
        echo(fd);
    close(fd);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s CONTROL_SOCKET CHANNEL_ID...\n", argv[0]);
        return 2;
    }
    signal(SIGCHLD, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    int control = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un address = { .sun_family = AF_UNIX };
    strncpy(address.sun_path, argv[1], sizeof address.sun_path - 1);
    if (connect(control, (struct sockaddr *)&address, sizeof address) < 0) {
        perror("connect");
        return 1;
    }
    for (int i = 2; i < argc; i++) {
        char request[256];
        int length = snprintf(request, sizeof request, "{\"op\":\"l2cap_listen\",\"channel\":\"%s\"}\n", argv[i]);
        if (write(control, request, (size_t)length) != length) {
            perror("write");
            return 1;
        }
    }
    char buffer[8192];
    size_t used = 0;
    for (;;) {
        char control_data[CMSG_SPACE(sizeof(int) * MAX_FDS)];
        struct iovec iov = { buffer + used, sizeof buffer - 1 - used };
        struct msghdr message = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control_data,
            .msg_controllen = sizeof control_data };
        ssize_t n = recvmsg(control, &message, MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            printf("control socket closed\n");
            return 0;
        }
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                continue;
            int count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int i = 0; i < count; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                if (nfds < MAX_FDS)
                    fds[nfds++] = fd;
                else
                    close(fd);
            }
        }
        used += (size_t)n;
        buffer[used] = 0;
        char *start = buffer, *end;
        while ((end = strchr(start, '\n'))) {
            *end = 0;
            line(start);
            start = end + 1;
        }
        used = strlen(start);
        memmove(buffer, start, used);
        if (used == sizeof buffer - 1)
            used = 0; /* a line longer than the buffer: dropped */
    }
}
