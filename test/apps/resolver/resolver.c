/*
 * resolver: looks names up with the C library's own getaddrinfo (AF_UNSPEC, as most apps do),
 * so that the lab can run the real glibc and musl resolvers inside pods.
 *
 *   resolver [--count N] [--every MS] [--family 4|6] [--time] [--idle] NAME...
 *
 * Prints one line per lookup: "lookup NAME ok ADDR,..." or "lookup NAME error MESSAGE".
 * --count N repeats the round of names N times (0 = forever), --every MS between rounds;
 * --idle then waits for SIGTERM, so the pod stays up for ephemeral containers.
 * --family 4 or 6 asks for one address family only (AF_INET/AF_INET6: A-only or AAAA-only lookups).
 * --time ends each line with " took_us=N", the lookup's duration in microseconds (monotonic clock).
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static int family = AF_UNSPEC;
static int timed;
static void on_term(int sig) { (void)sig; stop = 1; }

static void lookup(const char *name) {
	struct addrinfo hints, *res, *ai;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = family;
	hints.ai_socktype = SOCK_STREAM;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = getaddrinfo(name, NULL, &hints, &res);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long took_us = (t1.tv_sec - t0.tv_sec) * 1000000L + (t1.tv_nsec - t0.tv_nsec) / 1000;
	char took[32] = "";
	if (timed) snprintf(took, sizeof took, " took_us=%ld", took_us);
	if (rc != 0) {
		printf("lookup %s error %s%s\n", name, gai_strerror(rc), took);
		fflush(stdout);
		return;
	}
	printf("lookup %s ok ", name);
	int first = 1;
	for (ai = res; ai; ai = ai->ai_next) {
		char buf[INET6_ADDRSTRLEN];
		void *a = ai->ai_family == AF_INET ? (void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr
		                                   : (void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
		if (inet_ntop(ai->ai_family, a, buf, sizeof buf)) {
			printf("%s%s", first ? "" : ",", buf);
			first = 0;
		}
	}
	printf("%s\n", took);
	fflush(stdout);
	freeaddrinfo(res);
}

int main(int argc, char **argv) {
	long count = 1, every_ms = 1000;
	int idle = 0, i = 1;
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
		if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) count = atol(argv[++i]);
		else if (strcmp(argv[i], "--every") == 0 && i + 1 < argc) every_ms = atol(argv[++i]);
		else if (strcmp(argv[i], "--idle") == 0) idle = 1;
		else if (strcmp(argv[i], "--time") == 0) timed = 1;
		else if (strcmp(argv[i], "--family") == 0 && i + 1 < argc) family = atol(argv[++i]) == 6 ? AF_INET6 : AF_INET;
		else { fprintf(stderr, "resolver: unknown flag %s\n", argv[i]); return 2; }
	}
	if (i == argc) idle = 1;
	for (long round = 0; i < argc && !stop && (count == 0 || round < count); round++) {
		if (round > 0) {
			struct timespec ts = {every_ms / 1000, (every_ms % 1000) * 1000000L};
			nanosleep(&ts, NULL);
		}
		for (int j = i; j < argc && !stop; j++) lookup(argv[j]);
	}
	while (idle && !stop) pause();
	return 0;
}
