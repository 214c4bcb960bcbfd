/* (g) The machine's floor: the CPU time one wake-up costs a process that does nothing else.
 *
 * Serves one connection (loopback TCP, as the virtual controllers' H4 links, or a Unix stream
 * socket, as gattd's control socket) in an epoll loop: each wake-up is one epoll_wait, one
 * read and one write of what was read — the least any event-driven peripheral does per
 * request. Prints its address, then at end of stream its wake-ups and CPU time (utime + stime)
 * as one JSON line. Built and driven by scripts/benchmark_floor.py.
 *
 *   benchmark_floor tcp          listens on 127.0.0.1, an ephemeral port
 *   benchmark_floor unix PATH    listens on PATH
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int one = 1, listener, connection;
    if (argc == 2 && strcmp(argv[1], "tcp") == 0) {
        struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t length = sizeof address;
        listener = socket(AF_INET, SOCK_STREAM, 0);
        if (bind(listener, (struct sockaddr *)&address, sizeof address) || listen(listener, 1) ||
            getsockname(listener, (struct sockaddr *)&address, &length)) { perror("tcp"); return 1; }
        printf("{\"port\": %d}\n", ntohs(address.sin_port));
    } else if (argc == 3 && strcmp(argv[1], "unix") == 0) {
        struct sockaddr_un address = {.sun_family = AF_UNIX};
        strncpy(address.sun_path, argv[2], sizeof address.sun_path - 1);
        listener = socket(AF_UNIX, SOCK_STREAM, 0);
        if (bind(listener, (struct sockaddr *)&address, sizeof address) || listen(listener, 1)) { perror("unix"); return 1; }
        printf("{\"path\": \"%s\"}\n", argv[2]);
    } else {
        fprintf(stderr, "usage: %s tcp | unix PATH\n", argv[0]);
        return 2;
    }
    fflush(stdout);
    if ((connection = accept(listener, NULL, NULL)) < 0) { perror("accept"); return 1; }
    if (argc == 2) setsockopt(connection, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int poller = epoll_create1(0);
    struct epoll_event interest = {.events = EPOLLIN, .data.fd = connection}, ready[8];
    epoll_ctl(poller, EPOLL_CTL_ADD, connection, &interest);

    struct rusage start, end;
    getrusage(RUSAGE_SELF, &start);
    char buffer[4096];
    long wakeups = 0;
    for (;;) {
        if (epoll_wait(poller, ready, 8, -1) < 0) continue;
        ssize_t count = read(connection, buffer, sizeof buffer);
        if (count <= 0) break;
        wakeups++;
        if (write(connection, buffer, (size_t)count) != count) break;
    }
    getrusage(RUSAGE_SELF, &end);
    double user = (end.ru_utime.tv_sec - start.ru_utime.tv_sec) + (end.ru_utime.tv_usec - start.ru_utime.tv_usec) / 1e6;
    double system = (end.ru_stime.tv_sec - start.ru_stime.tv_sec) + (end.ru_stime.tv_usec - start.ru_stime.tv_usec) / 1e6;
    printf("{\"wakeups\": %ld, \"user_s\": %.6f, \"system_s\": %.6f}\n", wakeups, user, system);
    return 0;
}
