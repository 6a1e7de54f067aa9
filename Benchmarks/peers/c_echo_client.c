/*
 * c_echo_client.c: a minimal C epoll WebSocket echo client, the reference for what one thread of plain C does
 * per message on this box (Benchmarks/echo-limit.sh builds it with `cc -O2` and runs it beside wsload and k6).
 *
 * It opens N connections to ws://127.0.0.1:PORT/PATH (loopback only; at most 256 connects or upgrades in
 * flight), does the RFC 6455 opening handshake and checks the 101 (Upgrade, Connection and
 * Sec-WebSocket-Accept, computed with OpenSSL's SHA-1 and base64; no extension, no subprotocol), then echoes
 * masked text frames of SIZE bytes for S seconds:
 *   closed model (--rate 0, the default): one message in flight per connection, the next sent on its echo;
 *   open model (--rate R): R messages/s in total on a fixed timetable, message j due at j/R seconds on
 *     connection j mod N, sent from a periodic timerfd tick (--tick-us, default 1 ms) whatever the echoes
 *     do; its round trip is measured from when it was due (as wsload's open model does).
 * Each payload starts with its per-connection sequence number (16 hex digits), so a lost, duplicated or
 * reordered echo is a protocol error. Pings are answered with pongs. At the end it waits at most 2 s for the
 * echoes still due, sends a close frame (1000) on every connection and waits at most 2 s for the server's,
 * then prints one line of key=value figures:
 * messages, msgs/s, its own CPU (getrusage: user + system, the whole process), messages per CPU-second, RTT
 * p50/p99, peak RSS and, in the open model, the share of the schedule delivered.
 *
 * Usage: c_echo_client --port PORT [--connections N] [--seconds S] [--size BYTES] [--rate R] [--tick-us US]
 *                      [--host 127.x.y.z] [--path /]
 * Bounds: N 1-19000, S 1-3600, SIZE 16-4096, R 0-10,000,000 and at most 10,000 per connection per second;
 * the connect phase must end within 60 s.
 * Exit: 0 done; 1 a system or connection error (refused, reset, timeout, the server closed early, echoes
 *       still missing 2 s after the end: the figures line is printed first);
 *       2 a protocol error (bad 101, bad frame, a lost or reordered echo); 64 usage.
 * Build: cc -O2 -o c_echo_client c_echo_client.c -lcrypto   (libssl-dev)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

enum { MAX_CONNECTIONS = 19000, MAX_SECONDS = 3600, MIN_SIZE = 16, MAX_SIZE = 4096, MAX_PENDING_CONNECTS = 256 };
enum { BUFFER_CAPACITY = 8192, IN_FLIGHT_RING = 64, EVENTS = 512 };
enum { EXIT_SYSTEM = 1, EXIT_PROTOCOL = 2, EXIT_USAGE = 64 };
#define CONNECT_DEADLINE_NS (60 * 1000000000LL)
#define DRAIN_DEADLINE_NS (2 * 1000000000LL)
#define CLOSE_DEADLINE_NS (2 * 1000000000LL)

enum state { STATE_IDLE, STATE_CONNECTING, STATE_UPGRADING, STATE_OPEN, STATE_CLOSING, STATE_CLOSED };

struct connection {
    int fd;
    enum state state;
    bool is_waiting_for_writable;   // EPOLLOUT registered: the out buffer did not drain
    bool is_in_message;             // a fragmented data message has begun
    uint32_t in_length;
    uint32_t out_length;
    uint32_t message_length;        // bytes of the current (possibly fragmented) message so far
    uint64_t sent_sequence;
    uint64_t received_sequence;
    int64_t sent_at[IN_FLIGHT_RING]; // when each in-flight message was sent (closed) or due (open), ns
    char expected_accept[32];
    char message_prefix[16];        // the current message's first 16 bytes: its sequence number in hex
    uint8_t in[BUFFER_CAPACITY];
    uint8_t out[BUFFER_CAPACITY];
};

// RTT histogram in microseconds: exact below 1,024, then 64 sub-buckets per doubling (1.6% resolution).
enum { LINEAR_BUCKETS = 1024, SUB_BUCKETS = 64, HISTOGRAM_BUCKETS = LINEAR_BUCKETS + 54 * SUB_BUCKETS };

static struct {
    const char *host, *path;
    int port, connections, seconds, size;
    long long rate;
    long tick_us;
    int epoll_fd, timer_fd;
    struct connection *connections_array;
    int next_to_connect, pending_connects, open_count, closed_count;
    bool is_sending;                // within the measured window
    int64_t window_start, window_end;
    uint64_t scheduled, next_scheduled, skipped, sent, received, received_in_window;
    uint64_t mask_state;
    uint64_t histogram[HISTOGRAM_BUCKETS];
    uint64_t histogram_count;
} client;

static void fail(int code, const char *format, ...) {
    va_list arguments;
    va_start(arguments, format);
    fputs("c_echo_client: ", stderr);
    vfprintf(stderr, format, arguments);
    fputc('\n', stderr);
    va_end(arguments);
    exit(code);
}

static int64_t now_ns(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (int64_t)time.tv_sec * 1000000000LL + time.tv_nsec;
}

static double cpu_seconds(struct rusage *usage) {
    return usage->ru_utime.tv_sec + usage->ru_utime.tv_usec / 1e6 + usage->ru_stime.tv_sec +
           usage->ru_stime.tv_usec / 1e6;
}

static void record_rtt(int64_t nanoseconds) {
    uint64_t micros = nanoseconds < 0 ? 0 : (uint64_t)nanoseconds / 1000;
    size_t index;
    if (micros < LINEAR_BUCKETS) {
        index = micros;
    } else {
        int exponent = 63 - __builtin_clzll(micros);   // >= 10
        index = LINEAR_BUCKETS + (size_t)(exponent - 10) * SUB_BUCKETS + ((micros >> (exponent - 6)) & 63);
        if (index >= HISTOGRAM_BUCKETS) index = HISTOGRAM_BUCKETS - 1;
    }
    client.histogram[index]++;
    client.histogram_count++;
}

static double percentile_ms(double fraction) {
    if (client.histogram_count == 0) return 0;
    uint64_t rank = (uint64_t)(fraction * client.histogram_count), seen = 0;
    for (size_t index = 0; index < HISTOGRAM_BUCKETS; index++) {
        seen += client.histogram[index];
        if (seen > rank) {
            if (index < LINEAR_BUCKETS) return index / 1000.0;
            size_t exponent = 10 + (index - LINEAR_BUCKETS) / SUB_BUCKETS, sub = (index - LINEAR_BUCKETS) % SUB_BUCKETS;
            return (double)((1ULL << exponent) + (sub << (exponent - 6))) / 1000.0;
        }
    }
    return 0;
}

static uint32_t next_mask(void) {   // xorshift64*, seeded from getrandom: unpredictable enough for masking keys
    client.mask_state ^= client.mask_state >> 12;
    client.mask_state ^= client.mask_state << 25;
    client.mask_state ^= client.mask_state >> 27;
    return (uint32_t)((client.mask_state * 2685821657736338717ULL) >> 32);
}

static void watch(struct connection *connection, uint32_t events, int operation) {
    struct epoll_event event = {.events = events, .data.ptr = connection};
    if (epoll_ctl(client.epoll_fd, operation, connection->fd, &event) != 0) fail(EXIT_SYSTEM, "epoll_ctl: %s", strerror(errno));
}

static void close_connection(struct connection *connection) {
    if (connection->state == STATE_CLOSED) return;
    close(connection->fd);   // also removes it from the epoll set
    connection->state = STATE_CLOSED;
    client.closed_count++;
}

// Writes what the out buffer holds; on EAGAIN waits for EPOLLOUT (level-triggered) until it drains.
static void flush(struct connection *connection) {
    uint32_t written = 0;
    while (written < connection->out_length) {
        ssize_t count = send(connection->fd, connection->out + written, connection->out_length - written, MSG_NOSIGNAL);
        if (count > 0) { written += (uint32_t)count; continue; }
        if (count < 0 && errno == EINTR) continue;
        if (count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (connection->state == STATE_CLOSING) { close_connection(connection); return; }
        fail(EXIT_SYSTEM, "send: %s", strerror(errno));
    }
    memmove(connection->out, connection->out + written, connection->out_length - written);
    connection->out_length -= written;
    bool is_waiting = connection->out_length > 0;
    if (is_waiting != connection->is_waiting_for_writable) {
        watch(connection, EPOLLIN | (is_waiting ? EPOLLOUT : 0), EPOLL_CTL_MOD);
        connection->is_waiting_for_writable = is_waiting;
    }
}

// Appends one masked client frame (RFC 6455 §5.2, §5.3); false when the out buffer has no room.
static bool append_frame(struct connection *connection, uint8_t opcode, const uint8_t *payload, size_t length) {
    size_t header = length <= 125 ? 2 : 4;
    if (connection->out_length + header + 4 + length > BUFFER_CAPACITY) return false;
    uint8_t *frame = connection->out + connection->out_length;
    frame[0] = 0x80 | opcode;
    if (length <= 125) {
        frame[1] = 0x80 | (uint8_t)length;
    } else {
        frame[1] = 0x80 | 126;
        frame[2] = (uint8_t)(length >> 8);
        frame[3] = (uint8_t)length;
    }
    uint32_t mask = next_mask();
    uint8_t *key = frame + header, *masked = key + 4;
    memcpy(key, &mask, 4);
    for (size_t index = 0; index < length; index++) masked[index] = payload[index] ^ key[index & 3];
    connection->out_length += (uint32_t)(header + 4 + length);
    return true;
}

// Sends the connection's next message (due at `due`, ns); false (skipped) when it cannot be sent now.
static bool send_message(struct connection *connection, int64_t due) {
    if (connection->sent_sequence - connection->received_sequence >= IN_FLIGHT_RING) return false;
    uint8_t payload[MAX_SIZE];
    char digits[17];
    snprintf(digits, sizeof digits, "%016" PRIx64, connection->sent_sequence);
    memcpy(payload, digits, 16);
    memset(payload + 16, 'x', (size_t)client.size - 16);
    if (!append_frame(connection, 0x1, payload, (size_t)client.size)) return false;
    connection->sent_at[connection->sent_sequence % IN_FLIGHT_RING] = due;
    connection->sent_sequence++;
    client.sent++;
    flush(connection);
    return true;
}

static void on_message(struct connection *connection) {
    if (connection->message_length != (uint32_t)client.size)
        fail(EXIT_PROTOCOL, "an echo of %u bytes, sent %d", connection->message_length, client.size);
    char digits[17];
    memcpy(digits, connection->message_prefix, 16);
    digits[16] = 0;
    char *end;
    uint64_t sequence = strtoull(digits, &end, 16);
    if (*end != 0 || sequence != connection->received_sequence || sequence >= connection->sent_sequence)
        fail(EXIT_PROTOCOL, "echo %s where %016" PRIx64 " was due (lost, duplicated or reordered)", digits,
             connection->received_sequence);
    int64_t now = now_ns();
    record_rtt(now - connection->sent_at[sequence % IN_FLIGHT_RING]);
    connection->received_sequence++;
    client.received++;
    if (now < client.window_end) client.received_in_window++;
    if (client.rate == 0 && client.is_sending && connection->state == STATE_OPEN) send_message(connection, now);
}

// Parses every whole server frame in the in buffer (RFC 6455 §5.2): unmasked, no reserved bits, control
// frames final and at most 125 bytes, continuation only within a message; lengths checked before buffering.
static void parse_frames(struct connection *connection) {
    uint32_t offset = 0;
    while (connection->state != STATE_CLOSED && connection->in_length - offset >= 2) {
        const uint8_t *frame = connection->in + offset;
        uint32_t available = connection->in_length - offset, header = 2;
        uint64_t length = frame[1] & 0x7f;
        if (frame[0] & 0x70) fail(EXIT_PROTOCOL, "a frame with reserved bits set");
        if (frame[1] & 0x80) fail(EXIT_PROTOCOL, "a masked frame from the server");
        if (length == 126) {
            if (available < 4) break;
            length = (uint64_t)frame[2] << 8 | frame[3];
            header = 4;
        } else if (length == 127) {
            if (available < 10) break;
            length = 0;
            for (int index = 2; index < 10; index++) length = length << 8 | frame[index];
            header = 10;
        }
        if (length > BUFFER_CAPACITY - 10) fail(EXIT_PROTOCOL, "a frame of %" PRIu64 " bytes", length);
        if (available < header + length) break;
        uint8_t opcode = frame[0] & 0x0f;
        bool is_final = frame[0] & 0x80;
        const uint8_t *payload = frame + header;
        offset += header + (uint32_t)length;
        if (opcode >= 0x8) {
            if (!is_final || length > 125) fail(EXIT_PROTOCOL, "a fragmented or long control frame");
            if (opcode == 0x8) {   // close: only expected as the answer to ours
                if (connection->state != STATE_CLOSING) fail(EXIT_SYSTEM, "the server closed a connection during the run");
                close_connection(connection);
                return;
            } else if (opcode == 0x9) {
                if (!append_frame(connection, 0xA, payload, length)) fail(EXIT_SYSTEM, "no room for a pong");
                flush(connection);
            } else if (opcode != 0xA) {
                fail(EXIT_PROTOCOL, "unknown control opcode %u", opcode);
            }
            continue;
        }
        if (opcode == 0x1 || opcode == 0x2) {
            if (connection->is_in_message) fail(EXIT_PROTOCOL, "a new message inside a fragmented one");
            connection->message_length = 0;
        } else if (opcode != 0x0 || !connection->is_in_message) {
            fail(EXIT_PROTOCOL, "opcode %u out of place", opcode);
        }
        uint32_t have = connection->message_length;
        if (have < 16) memcpy(connection->message_prefix + have, payload, length < 16 - have ? length : 16 - have);
        if (have + length > MAX_SIZE) fail(EXIT_PROTOCOL, "a message longer than %d bytes", MAX_SIZE);
        connection->message_length = have + (uint32_t)length;
        connection->is_in_message = !is_final;
        if (is_final) on_message(connection);
    }
    if (connection->state == STATE_CLOSED) return;
    memmove(connection->in, connection->in + offset, connection->in_length - offset);
    connection->in_length -= offset;
}

static const char *header_value(const char *head, const char *name) {   // in a NUL-terminated head
    size_t length = strlen(name);
    for (const char *line = strstr(head, "\r\n"); line && line[2] != '\r'; line = strstr(line + 2, "\r\n")) {
        if (strncasecmp(line + 2, name, length) == 0 && line[2 + length] == ':') {
            const char *value = line + 3 + length;
            while (*value == ' ' || *value == '\t') value++;
            return value;
        }
    }
    return NULL;
}

static bool value_is(const char *value, const char *expected) {   // up to the line end, trailing blanks ignored
    size_t length = strlen(expected);
    if (!value || strncasecmp(value, expected, length) != 0) return false;
    for (value += length; *value == ' ' || *value == '\t'; value++) {}
    return value[0] == '\r';
}

static bool value_has_token(const char *value, const char *token) {   // a comma-separated list
    size_t length = strlen(token);
    while (value && *value != '\r') {
        while (*value == ' ' || *value == '\t' || *value == ',') value++;
        const char *end = value;
        while (*end && *end != ',' && *end != '\r') end++;
        const char *last = end;
        while (last > value && (last[-1] == ' ' || last[-1] == '\t')) last--;
        if ((size_t)(last - value) == length && strncasecmp(value, token, length) == 0) return true;
        value = end;
    }
    return false;
}

static void start_run(void);

// Checks the server's 101 (RFC 6455 §4.1, client requirements 1-6); bytes after the head are frames.
static void on_upgrade_bytes(struct connection *connection) {
    uint8_t *end = memmem(connection->in, connection->in_length, "\r\n\r\n", 4);
    if (!end) {
        if (connection->in_length >= BUFFER_CAPACITY - 1) fail(EXIT_PROTOCOL, "a response head over %d bytes", BUFFER_CAPACITY);
        return;
    }
    uint32_t head_length = (uint32_t)(end - connection->in) + 4;
    char head[BUFFER_CAPACITY + 1];
    memcpy(head, connection->in, head_length);
    head[head_length] = 0;
    if (strncmp(head, "HTTP/1.1 101", 12) != 0 || (head[12] != ' ' && head[12] != '\r'))
        fail(EXIT_PROTOCOL, "the upgrade was answered %.40s", head);
    if (!value_is(header_value(head, "Upgrade"), "websocket")) fail(EXIT_PROTOCOL, "a 101 without Upgrade: websocket");
    if (!value_has_token(header_value(head, "Connection"), "upgrade")) fail(EXIT_PROTOCOL, "a 101 without Connection: upgrade");
    if (!value_is(header_value(head, "Sec-WebSocket-Accept"), connection->expected_accept))
        fail(EXIT_PROTOCOL, "a 101 with a wrong Sec-WebSocket-Accept");
    if (header_value(head, "Sec-WebSocket-Extensions") || header_value(head, "Sec-WebSocket-Protocol"))
        fail(EXIT_PROTOCOL, "a 101 with an extension or subprotocol that was not offered");
    memmove(connection->in, connection->in + head_length, connection->in_length - head_length);
    connection->in_length -= head_length;
    connection->state = STATE_OPEN;
    client.pending_connects--;
    client.open_count++;
    if (client.open_count == client.connections) start_run();
    parse_frames(connection);
}

static void start_connect(struct connection *connection) {
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)client.port)};
    inet_pton(AF_INET, client.host, &address.sin_addr);
    connection->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (connection->fd < 0) fail(EXIT_SYSTEM, "socket: %s", strerror(errno));
    int one = 1;
    setsockopt(connection->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(connection->fd, (struct sockaddr *)&address, sizeof address) != 0 && errno != EINPROGRESS)
        fail(EXIT_SYSTEM, "connect: %s", strerror(errno));
    connection->state = STATE_CONNECTING;
    client.pending_connects++;
    watch(connection, EPOLLOUT, EPOLL_CTL_ADD);
}

static void connect_more(void) {
    while (client.next_to_connect < client.connections && client.pending_connects < MAX_PENDING_CONNECTS)
        start_connect(&client.connections_array[client.next_to_connect++]);
}

static void on_connected(struct connection *connection) {
    int error = 0;
    socklen_t length = sizeof error;
    if (getsockopt(connection->fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 || error != 0)
        fail(EXIT_SYSTEM, "connect to %s:%d: %s", client.host, client.port, strerror(error ? error : errno));
    uint8_t key_bytes[16];
    if (getrandom(key_bytes, sizeof key_bytes, 0) != sizeof key_bytes) fail(EXIT_SYSTEM, "getrandom failed");
    char key[32], concatenated[80];
    EVP_EncodeBlock((unsigned char *)key, key_bytes, sizeof key_bytes);
    snprintf(concatenated, sizeof concatenated, "%s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", key);
    unsigned char digest[SHA_DIGEST_LENGTH];
    SHA1((const unsigned char *)concatenated, strlen(concatenated), digest);
    EVP_EncodeBlock((unsigned char *)connection->expected_accept, digest, SHA_DIGEST_LENGTH);
    int length_written = snprintf((char *)connection->out, BUFFER_CAPACITY,
        "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n", client.path, client.host, client.port, key);
    connection->out_length = (uint32_t)length_written;
    connection->state = STATE_UPGRADING;
    watch(connection, EPOLLIN | EPOLLOUT, EPOLL_CTL_MOD);   // flush drops EPOLLOUT once the request is out
    connection->is_waiting_for_writable = true;
    flush(connection);
}

static void on_readable(struct connection *connection) {
    ssize_t count = recv(connection->fd, connection->in + connection->in_length, BUFFER_CAPACITY - connection->in_length, 0);
    if (count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (count <= 0) {
        if (connection->state == STATE_CLOSING) { close_connection(connection); return; }
        fail(EXIT_SYSTEM, "the server %s a connection", count == 0 ? "closed" : "reset");
    }
    connection->in_length += (uint32_t)count;
    if (connection->state == STATE_UPGRADING) on_upgrade_bytes(connection); else parse_frames(connection);
}

static void start_run(void) {
    client.window_start = now_ns();
    client.window_end = client.window_start + (int64_t)client.seconds * 1000000000LL;
    client.is_sending = true;
    if (client.rate == 0) {
        for (int index = 0; index < client.connections; index++)
            send_message(&client.connections_array[index], client.window_start);
        return;
    }
    client.scheduled = (uint64_t)client.rate * (uint64_t)client.seconds;
    struct itimerspec tick = {.it_interval = {.tv_nsec = client.tick_us * 1000}, .it_value = {.tv_nsec = client.tick_us * 1000}};
    if (timerfd_settime(client.timer_fd, 0, &tick, NULL) != 0) fail(EXIT_SYSTEM, "timerfd_settime: %s", strerror(errno));
}

// Sends every open-model message due by `now` (each on its connection, measured from when it was due).
static void send_due(int64_t now) {
    if (now >= client.window_end) now = client.window_end - 1;
    uint64_t due = (uint64_t)((__int128)(now - client.window_start) * client.rate / 1000000000LL) + 1;
    if (due > client.scheduled) due = client.scheduled;
    for (; client.next_scheduled < due; client.next_scheduled++) {
        uint64_t message = client.next_scheduled;
        struct connection *connection = &client.connections_array[message % (uint64_t)client.connections];
        int64_t due_at = client.window_start + (int64_t)((__int128)message * 1000000000LL / client.rate);
        if (!send_message(connection, due_at)) client.skipped++;
    }
}

static void on_tick(void) {
    uint64_t expirations;
    if (read(client.timer_fd, &expirations, sizeof expirations) < 0 && errno != EAGAIN) fail(EXIT_SYSTEM, "timerfd read");
    send_due(now_ns());
}

static void dispatch(struct epoll_event *event) {
    struct connection *connection = event->data.ptr;
    if (!connection) { on_tick(); return; }
    if (connection->state == STATE_CLOSED) return;
    if (connection->state == STATE_CONNECTING) {
        if (event->events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) on_connected(connection);
        return;
    }
    if (event->events & (EPOLLIN | EPOLLERR | EPOLLHUP)) on_readable(connection);
    if (connection->state != STATE_CLOSED && (event->events & EPOLLOUT) && connection->out_length > 0) flush(connection);
}

static void poll_once(int timeout_ms) {
    struct epoll_event events[EVENTS];
    int count = epoll_wait(client.epoll_fd, events, EVENTS, timeout_ms);
    if (count < 0 && errno != EINTR) fail(EXIT_SYSTEM, "epoll_wait: %s", strerror(errno));
    for (int index = 0; index < count; index++) dispatch(&events[index]);
}

static int remaining_ms(int64_t deadline) {
    int64_t left = deadline - now_ns();
    return left <= 0 ? 0 : (int)(left / 1000000 + 1);
}

static long long parse_number(const char *text, const char *option, long long low, long long high) {
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (errno != 0 || *end != 0 || end == text || value < low || value > high)
        fail(EXIT_USAGE, "%s must be a whole number from %lld to %lld, not '%s'", option, low, high, text);
    return value;
}

static void parse_arguments(int argc, char **argv) {
    static const struct option options[] = {
        {"port", required_argument, 0, 'p'}, {"connections", required_argument, 0, 'c'},
        {"seconds", required_argument, 0, 's'}, {"size", required_argument, 0, 'z'},
        {"rate", required_argument, 0, 'r'}, {"tick-us", required_argument, 0, 't'},
        {"host", required_argument, 0, 'h'}, {"path", required_argument, 0, 'a'}, {0, 0, 0, 0}};
    client.host = "127.0.0.1";
    client.path = "/";
    client.connections = 1000;
    client.seconds = 10;
    client.size = 64;
    client.tick_us = 1000;
    int option;
    while ((option = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (option) {
        case 'p': client.port = (int)parse_number(optarg, "--port", 1, 65535); break;
        case 'c': client.connections = (int)parse_number(optarg, "--connections", 1, MAX_CONNECTIONS); break;
        case 's': client.seconds = (int)parse_number(optarg, "--seconds", 1, MAX_SECONDS); break;
        case 'z': client.size = (int)parse_number(optarg, "--size", MIN_SIZE, MAX_SIZE); break;
        case 'r': client.rate = parse_number(optarg, "--rate", 0, 10000000); break;
        case 't': client.tick_us = (long)parse_number(optarg, "--tick-us", 100, 100000); break;
        case 'h': client.host = optarg; break;
        case 'a': client.path = optarg; break;
        default: fail(EXIT_USAGE, "usage: c_echo_client --port PORT [--connections N] [--seconds S] [--size BYTES] "
                                  "[--rate R] [--tick-us US] [--host 127.x.y.z] [--path /]");
        }
    }
    if (optind != argc) fail(EXIT_USAGE, "unexpected argument '%s'", argv[optind]);
    if (client.port == 0) fail(EXIT_USAGE, "--port is required");
    struct in_addr address;
    if (inet_pton(AF_INET, client.host, &address) != 1 || (ntohl(address.s_addr) >> 24) != 127)
        fail(EXIT_USAGE, "--host must be a loopback address (127.x.y.z), not '%s'", client.host);
    if (client.path[0] != '/' || strlen(client.path) > 1024 || strpbrk(client.path, " \r\n"))
        fail(EXIT_USAGE, "--path must start with / and hold no spaces or line breaks");
    if (client.rate > 10000LL * client.connections) fail(EXIT_USAGE, "--rate over 10,000 per connection per second");
}

int main(int argc, char **argv) {
    parse_arguments(argc, argv);
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
    }
    if (getrandom(&client.mask_state, sizeof client.mask_state, 0) != sizeof client.mask_state) fail(EXIT_SYSTEM, "getrandom");
    client.mask_state |= 1;
    client.connections_array = calloc((size_t)client.connections, sizeof *client.connections_array);
    if (!client.connections_array) fail(EXIT_SYSTEM, "out of memory");
    client.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    client.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (client.epoll_fd < 0 || client.timer_fd < 0) fail(EXIT_SYSTEM, "epoll or timerfd: %s", strerror(errno));
    struct epoll_event timer_event = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(client.epoll_fd, EPOLL_CTL_ADD, client.timer_fd, &timer_event);

    int64_t started = now_ns(), connect_deadline = started + CONNECT_DEADLINE_NS;
    connect_more();
    while (client.open_count < client.connections) {
        if (now_ns() >= connect_deadline)
            fail(EXIT_SYSTEM, "only %d of %d connections open after 60 s", client.open_count, client.connections);
        poll_once(remaining_ms(connect_deadline));
        connect_more();
    }
    double connect_seconds = (client.window_start - started) / 1e9;
    while (now_ns() < client.window_end) poll_once(remaining_ms(client.window_end));
    if (client.rate) send_due(client.window_end);   // the last tick's share, if the window ended before it
    client.is_sending = false;
    struct itimerspec stop = {0};
    timerfd_settime(client.timer_fd, 0, &stop, NULL);

    // Drain: the open model's late echoes (closed: the one in flight) count, within the close deadline.
    int64_t drain_deadline = now_ns() + DRAIN_DEADLINE_NS;
    while (client.received < client.sent && now_ns() < drain_deadline) poll_once(remaining_ms(drain_deadline));
    int64_t close_deadline = now_ns() + CLOSE_DEADLINE_NS;
    static const uint8_t normal_closure[2] = {0x03, 0xe8};   // 1000 (RFC 6455 §7.4.1)
    for (int index = 0; index < client.connections; index++) {
        struct connection *connection = &client.connections_array[index];
        if (connection->state != STATE_OPEN) continue;
        connection->state = STATE_CLOSING;
        if (append_frame(connection, 0x8, normal_closure, 2)) flush(connection); else close_connection(connection);
    }
    while (client.closed_count < client.connections && now_ns() < close_deadline) poll_once(remaining_ms(close_deadline));
    int unclosed = client.connections - client.closed_count;

    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    double cpu = cpu_seconds(&usage);
    printf("model=%s connections=%d size=%d seconds=%d connect_s=%.3f messages=%" PRIu64 " msgs_per_s=%.0f cpu_s=%.3f "
           "msgs_per_cpu_s=%.0f rtt_p50_ms=%.3f rtt_p99_ms=%.3f max_rss_kb=%ld unclosed=%d",
           client.rate ? "open" : "closed", client.connections, client.size, client.seconds, connect_seconds,
           client.received, client.received_in_window / (double)client.seconds, cpu,
           cpu > 0 ? client.received / cpu : 0, percentile_ms(0.5), percentile_ms(0.99), usage.ru_maxrss, unclosed);
    if (client.rate)
        printf(" rate=%lld scheduled=%" PRIu64 " sent=%" PRIu64 " skipped=%" PRIu64 " delivered_pct=%.3f", client.rate,
               client.scheduled, client.sent, client.skipped, client.scheduled ? 100.0 * client.received / client.scheduled : 0);
    printf(" unanswered=%" PRIu64 "\n", client.sent - client.received);
    if (client.sent > client.received)
        fail(EXIT_SYSTEM, "%" PRIu64 " echoes not back 2 s after the end (lost or too late)", client.sent - client.received);
    return 0;
}
