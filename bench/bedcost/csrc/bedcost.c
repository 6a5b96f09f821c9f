/*
 * bedcost.c: the C half of bench/bedcost, what one unit of work costs in
 * the bed it runs in. Built by bench/scenarios/bedcost with gcc -O2 and run
 * on the host, in the uml bed and in the vm bed, so each bed's distortion
 * is a ratio to the host.
 *
 * Each probe doubles its iteration count until one timed batch lasts at
 * least MIN_NS, then repeats that batch REPS times and prints the fastest,
 * one line per probe:
 *
 *     <probe> <ns per op> <iterations per batch>
 *
 * The fastest batch, not the median: these machines are shared, and other
 * load only ever adds time.
 *
 *   cpu-c      one step of a xorshift64 loop (pure ALU, no memory)
 *   syscall-c  getppid(2) through syscall(2), never cached by libc
 *   futex-c    a round trip between two threads that wake each other with
 *              FUTEX_WAKE and sleep in FUTEX_WAIT (two wake-ups)
 *   clock-c    clock_gettime(CLOCK_MONOTONIC) (vDSO where the kernel has it)
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MIN_NS 200000000LL /* 0.2 s */
#define REPS 3

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static volatile uint64_t sink;

static void run_cpu(long n)
{
	uint64_t x = 88172645463325252ULL;
	for (long i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	sink = x;
}

static void run_syscall(long n)
{
	for (long i = 0; i < n; i++)
		sink += (uint64_t)syscall(SYS_getppid);
}

static void run_clock(long n)
{
	struct timespec ts;
	for (long i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sink += (uint64_t)ts.tv_nsec;
	}
}

/* futex ping-pong: turn is 0 when the main thread may go, 1 for the peer. */
static _Atomic int turn;
static _Atomic long peer_left;

static void futex_wait(_Atomic int *addr, int val)
{
	syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(_Atomic int *addr)
{
	syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *peer(void *arg)
{
	(void)arg;
	for (;;) {
		while (atomic_load(&turn) != 1)
			futex_wait(&turn, 0);
		if (atomic_load(&peer_left) < 0)
			return NULL;
		atomic_store(&turn, 0);
		futex_wake(&turn);
	}
}

static void run_futex(long n)
{
	for (long i = 0; i < n; i++) {
		atomic_store(&turn, 1);
		futex_wake(&turn);
		while (atomic_load(&turn) != 0)
			futex_wait(&turn, 1);
	}
}

struct probe {
	const char *name;
	void (*run)(long);
	long start;
};

static void measure(const struct probe *p)
{
	long n = p->start;
	int64_t t;
	for (;;) {
		int64_t t0 = now_ns();
		p->run(n);
		t = now_ns() - t0;
		if (t >= MIN_NS || n > (1L << 40))
			break;
		n *= 2;
	}
	int64_t best = t;
	for (int r = 1; r < REPS; r++) {
		int64_t t0 = now_ns();
		p->run(n);
		t = now_ns() - t0;
		if (t < best)
			best = t;
	}
	printf("%s %.3f %ld\n", p->name, (double)best / (double)n, n);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const struct probe probes[] = {
		{"cpu-c", run_cpu, 1L << 20},
		{"syscall-c", run_syscall, 64},
		{"futex-c", run_futex, 16},
		{"clock-c", run_clock, 1024},
	};
	pthread_t th;
	if (pthread_create(&th, NULL, peer, NULL) != 0) {
		perror("pthread_create");
		return 1;
	}
	for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
		if (argc > 1) {
			int want = 0;
			for (int a = 1; a < argc; a++)
				want |= strcmp(argv[a], probes[i].name) == 0;
			if (!want)
				continue;
		}
		measure(&probes[i]);
	}
	atomic_store(&peer_left, -1);
	atomic_store(&turn, 1);
	futex_wake(&turn);
	pthread_join(th, NULL);
	return 0;
}
