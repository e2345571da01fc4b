/*
 * delay-relay: extra delay on the links of one network-namespace host, where the kernel has no sch_netem.
 *
 * Run inside a host's namespace together with an iptables rule that sends the host's own outgoing TCP connections
 * to it (bench/lib/delay-relay compiles this file on first use and runs it):
 *
 *   iptables -t nat -A OUTPUT -p tcp -d SUBNET ! --dport 22 -m mark ! --mark MARK -j REDIRECT --to-ports PORT
 *   delay-relay --port PORT --delay-ms 0.1 --mark MARK --lifetime 600 --stats FILE
 *
 * Each redirected connection is accepted here, its original destination read back (SO_ORIGINAL_DST) and a
 * connection opened to it (marked, so the rule lets it through). Bytes in both directions are held DELAY after they
 * arrive, then sent in order: the program sees each of those links DELAY longer one way. The relay's own sockets
 * acknowledge at once, so TCP's window does not see the delay (a delay seen by the program, not a long fat pipe).
 * At most --buffer bytes wait per direction (then reading pauses). Connections the host accepts are not delayed,
 * nor is UDP (the liveness watch's heartbeats). A connection whose far end refuses it, or does not answer in 10 s, is
 * reset: the program sees a reset where it would have seen a refusal, at its connect or its first read (a retrying
 * client, such as a rank waiting for the rendezvous, retries as before; the log names each: "connecting to
 * ADDRESS:PORT: Connection refused"). Likewise a connect is answered at once, by the relay, before the far end is.
 *
 * One thread and one epoll loop, timed with epoll_pwait2 and a timer slack of 1 ns: the relay adds a wake-up and
 * two copies per chunk, microseconds rather than the hundreds a thread hand-off per chunk costs, so delays of
 * 50-100 us (a real 10-100 GbE network) can be emulated. --delay-ms 0 measures the relay's own cost.
 *
 * The relay ends by itself after --lifetime seconds; --stats gets its running totals, "connections=N bytes=B"
 * (connections opened, bytes delivered), rewritten every second and whenever a connection opens or closes.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80
#endif

#define CHUNK_BYTES (256 * 1024)
#define CONNECT_LIMIT_NS (10LL * 1000000000LL)
#define SECOND_NS 1000000000LL

struct chunk {
    struct chunk *next;
    long long due;
    size_t len, off;
    char data[];
};

/* Bytes read from one socket of a pair, held, then written to the other. */
struct flow {
    struct chunk *head, *tail;
    size_t held;
    int eof;     /* the source sent FIN */
    int shut;    /* FIN passed on to the destination */
    int blocked; /* the destination's send buffer is full: waiting for EPOLLOUT */
};

struct pair;
struct endpoint {
    struct pair *pair;
    int side;
};

/* fd[0]: the connection the host's program opened (redirected here); fd[1]: the relay's own to the destination.
 * flow[k] carries what fd[k] sends to fd[1 - k]. */
struct pair {
    int fd[2];
    struct flow flow[2];
    struct endpoint ends[2];
    unsigned watched[2]; /* epoll events registered per fd; 0: not registered */
    int connecting, dead;
    long long connect_deadline;
    char destination[32]; /* "address:port", for messages */
    struct pair *next;
};

static int epfd, listen_fd, relay_mark;
static long long delay_ns;
static size_t buffer_limit = 16u << 20;
static const char *stats_path;
static unsigned long long connections_opened, bytes_delivered;
static struct pair *pairs;
static char scratch[CHUNK_BYTES];

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * SECOND_NS + ts.tv_nsec;
}

static void write_stats(void) {
    if (!stats_path) return;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", stats_path);
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    fprintf(f, "connections=%llu bytes=%llu\n", connections_opened, bytes_delivered);
    if (fclose(f) == 0) rename(tmp, stats_path);
}

static void watch(struct pair *p, int side, unsigned events) {
    if (p->watched[side] == events) return;
    struct epoll_event ev = {.events = events, .data.ptr = &p->ends[side]};
    int op = events == 0 ? EPOLL_CTL_DEL : p->watched[side] == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
    if (epoll_ctl(epfd, op, p->fd[side], &ev) == 0) p->watched[side] = events;
}

/* Closes both sockets; abortive (RST) when `abort`, so the far ends see the failure the relay saw. The pair is freed
 * at the top of the next loop, after the events that may still name it. */
static void close_pair(struct pair *p, int abort) {
    if (p->dead) return;
    for (int k = 0; k < 2; k++) {
        watch(p, k, 0);
        if (abort) {
            struct linger l = {.l_onoff = 1, .l_linger = 0};
            setsockopt(p->fd[k], SOL_SOCKET, SO_LINGER, &l, sizeof l);
        }
        close(p->fd[k]);
        for (struct chunk *c = p->flow[k].head, *n; c; c = n) {
            n = c->next;
            free(c);
        }
        p->flow[k].head = p->flow[k].tail = NULL;
    }
    p->dead = 1;
    write_stats();
}

/* Reads what fd[side] has into its flow, stamped now + DELAY, until the socket is drained or the flow is full. */
static int read_side(struct pair *p, int side) {
    struct flow *f = &p->flow[side];
    while (!f->eof && f->held < buffer_limit) {
        ssize_t n = recv(p->fd[side], scratch, sizeof scratch, MSG_DONTWAIT);
        if (n == 0) {
            f->eof = 1;
        } else if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
            if (errno == EINTR) continue;
            return -1;
        } else {
            struct chunk *c = malloc(sizeof *c + (size_t) n);
            if (!c) return -1;
            memcpy(c->data, scratch, (size_t) n);
            c->len = (size_t) n;
            c->off = 0;
            c->due = now_ns() + delay_ns;
            c->next = NULL;
            if (f->tail) f->tail->next = c; else f->head = c;
            f->tail = c;
            f->held += (size_t) n;
        }
    }
    return 0;
}

/* Writes the flow's chunks that are due; passes FIN on once the source's EOF and every byte before it are out. */
static int flush(struct pair *p, int side, long long now) {
    struct flow *f = &p->flow[side];
    int dst = p->fd[1 - side];
    while (f->head && f->head->due <= now && !f->blocked) {
        struct chunk *c = f->head;
        ssize_t n = send(dst, c->data + c->off, c->len - c->off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                f->blocked = 1;
                break;
            }
            if (errno == EINTR) continue;
            return -1;
        }
        c->off += (size_t) n;
        bytes_delivered += (unsigned long long) n;
        if (c->off == c->len) {
            f->head = c->next;
            if (!f->head) f->tail = NULL;
            f->held -= c->len;
            free(c);
        }
    }
    if (!f->head && f->eof && !f->shut) {
        shutdown(dst, SHUT_WR);
        f->shut = 1;
    }
    return 0;
}

/* What each socket should be watched for: input while its flow has room, output while the flow into it is blocked;
 * nothing (unregistered) once both are over, so a closed socket's EPOLLHUP does not spin the loop. */
static void rewatch(struct pair *p) {
    for (int k = 0; k < 2; k++) {
        unsigned events = 0;
        if (k == 1 && p->connecting) {
            events = EPOLLOUT;
        } else {
            if (!p->flow[k].eof && p->flow[k].held < buffer_limit) events |= EPOLLIN;
            if (p->flow[1 - k].blocked) events |= EPOLLOUT;
        }
        watch(p, k, events);
    }
}

static void accept_all(void) {
    for (;;) {
        int in = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (in < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            return; /* EAGAIN, or out of descriptors: the rest wait in the backlog */
        }
        struct sockaddr_in dst;
        socklen_t len = sizeof dst;
        if (getsockopt(in, SOL_IP, SO_ORIGINAL_DST, &dst, &len) != 0) {
            fprintf(stderr, "delay-relay: no original destination (not redirected here?): %s\n", strerror(errno));
            close(in);
            continue;
        }
        int out = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        struct pair *p = out < 0 ? NULL : calloc(1, sizeof *p);
        if (!p) {
            fprintf(stderr, "delay-relay: %s\n", strerror(errno));
            if (out >= 0) close(out);
            close(in);
            continue;
        }
        int one = 1;
        setsockopt(out, SOL_SOCKET, SO_MARK, &relay_mark, sizeof relay_mark);
        setsockopt(in, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(out, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        p->fd[0] = in;
        p->fd[1] = out;
        for (int k = 0; k < 2; k++) p->ends[k] = (struct endpoint){.pair = p, .side = k};
        p->connecting = 1;
        p->connect_deadline = now_ns() + CONNECT_LIMIT_NS;
        p->next = pairs;
        pairs = p;
        connections_opened++;
        char host[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &dst.sin_addr, host, sizeof host);
        snprintf(p->destination, sizeof p->destination, "%s:%d", host, ntohs(dst.sin_port));
        if (connect(out, (struct sockaddr *) &dst, sizeof dst) != 0 && errno != EINPROGRESS) {
            fprintf(stderr, "delay-relay: connecting to %s: %s\n", p->destination, strerror(errno));
            close_pair(p, 1);
            continue;
        }
        rewatch(p);
        write_stats();
    }
}

static void on_event(struct endpoint *e, unsigned events) {
    struct pair *p = e->pair;
    int k = e->side;
    if (p->dead) return;
    if (k == 1 && p->connecting) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(p->fd[1], SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
            fprintf(stderr, "delay-relay: connecting to %s: %s\n", p->destination, strerror(err));
            close_pair(p, 1);
            return;
        }
        p->connecting = 0;
        return;
    }
    if (events & EPOLLOUT) p->flow[1 - k].blocked = 0;
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        if (read_side(p, k) != 0) close_pair(p, 1);
    }
}

static void usage(FILE *to) {
    fprintf(to, "usage: delay-relay --port PORT --delay-ms D --mark MARK --lifetime SECONDS [--buffer BYTES] [--stats FILE]\n"
                "A delaying TCP relay for iptables REDIRECT; see the comment at the top of bench/lib/delay-relay.c.\n");
}

int main(int argc, char **argv) {
    static const struct option options[] = {
        {"port", required_argument, 0, 'p'}, {"delay-ms", required_argument, 0, 'd'},
        {"mark", required_argument, 0, 'm'}, {"lifetime", required_argument, 0, 'l'},
        {"buffer", required_argument, 0, 'b'}, {"stats", required_argument, 0, 's'},
        {"help", no_argument, 0, 'h'},       {0, 0, 0, 0}};
    long port = -1;
    double delay_ms = -1, lifetime = -1;
    long mark = -1;
    char *end;
    int o;
    while ((o = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (o) {
        case 'p': port = strtol(optarg, &end, 10); if (*end) port = -1; break;
        case 'd': delay_ms = strtod(optarg, &end); if (*end) delay_ms = -1; break;
        case 'm': mark = strtol(optarg, &end, 10); if (*end) mark = -1; break;
        case 'l': lifetime = strtod(optarg, &end); if (*end) lifetime = -1; break;
        case 'b': buffer_limit = strtoull(optarg, &end, 10); if (*end) buffer_limit = 0; break;
        case 's': stats_path = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc || port < 1 || port > 65535 || mark < 1 || mark > 0x7fffffff || !(delay_ms >= 0 && delay_ms <= 10000)
        || !(lifetime > 0 && lifetime <= 86400) || buffer_limit < 65536) {
        fprintf(stderr, "delay-relay: --port 1..65535, --mark 1 or more, --delay-ms 0..10000, --lifetime 0..86400 s "
                        "(more than 0) and --buffer at least 65536 are needed\n");
        usage(stderr);
        return 2;
    }
    relay_mark = (int) mark;
    delay_ns = (long long) (delay_ms * 1e6 + 0.5);
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* wake when due, not up to 50 us later */
    signal(SIGPIPE, SIG_IGN);

    listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in any = {.sin_family = AF_INET, .sin_port = htons((unsigned short) port), .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *) &any, sizeof any) != 0 || listen(listen_fd, 512) != 0) {
        fprintf(stderr, "delay-relay: cannot listen on port %ld: %s\n", port, strerror(errno));
        return 1;
    }
    epfd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(epfd, EPOLL_CTL_ADD, listen_fd, &lev);
    write_stats();
    printf("delay-relay: port %ld, %.3f ms each way, mark %ld, for %.0f s\n", port, delay_ms, mark, lifetime);
    fflush(stdout);

    long long end_at = now_ns() + (long long) (lifetime * 1e9);
    long long stats_due = now_ns() + SECOND_NS;
    struct epoll_event events[128];
    for (;;) {
        long long now = now_ns();
        if (now >= end_at) break;
        long long next = end_at < stats_due ? end_at : stats_due;
        for (struct pair **link = &pairs; *link;) {
            struct pair *p = *link;
            if (!p->dead && p->connecting && now >= p->connect_deadline) {
                fprintf(stderr, "delay-relay: connecting to %s: no answer in 10 s\n", p->destination);
                close_pair(p, 1);
            }
            if (p->dead) {
                *link = p->next;
                free(p);
                continue;
            }
            if (p->connecting) {
                if (p->connect_deadline < next) next = p->connect_deadline;
            } else {
                for (int k = 0; k < 2 && !p->dead; k++) {
                    if (flush(p, k, now) != 0) close_pair(p, 1);
                    else if (p->flow[k].head && !p->flow[k].blocked && p->flow[k].head->due < next) next = p->flow[k].head->due;
                }
                if (!p->dead && p->flow[0].shut && p->flow[1].shut) close_pair(p, 0);
            }
            if (!p->dead) rewatch(p);
            link = &p->next;
        }
        if (now >= stats_due) {
            write_stats();
            stats_due = now + SECOND_NS;
        }
        long long wait = next - now;
        if (wait < 0) wait = 0;
        struct timespec ts = {.tv_sec = wait / SECOND_NS, .tv_nsec = wait % SECOND_NS};
        int n = epoll_pwait2(epfd, events, 128, &ts, NULL);
        if (n < 0 && errno != EINTR) {
            perror("delay-relay: epoll_pwait2");
            return 1;
        }
        for (int i = 0; i < n; i++) {
            if (events[i].data.ptr == NULL) accept_all();
            else on_event(events[i].data.ptr, events[i].events);
        }
    }
    write_stats();
    return 0;
}
