/*
 * uml-xstate.c: an LD_PRELOAD library for linux.uml (User-Mode Linux 6.1)
 * that lets it run on hosts whose XSAVE image is larger than the fixed
 * buffer UML keeps each guest task's FP state in (Debian's 6.1um build:
 * 2696 bytes, x87 through AVX-512 and PKRU; older builds: 832), such as
 * CPUs with AMX.
 *
 * The problem. UML moves a task's FP state to and from the host process
 * that runs the task with PTRACE_GETREGSET / PTRACE_SETREGSET
 * (NT_X86_XSTATE) and its fixed-size buffer. The host kernel accepts a
 * short GET (it copies a prefix), but a SET must hand it the whole XSAVE
 * image (xstateregs_set wants exactly the full size) and otherwise fails
 * with EFAULT ("ptrace set fp regs failed, errno = 14"): UML panics at boot.
 *
 * What this does. It wraps ptrace(). On an NT_X86_XSTATE GET of UML's size
 * it reads the full image from the kernel, gives UML its prefix as before,
 * and keeps the rest (the components past UML's buffer) in a snapshot of
 * its own. The snapshot's tag is written into the bytes UML holds, in
 * software-reserved padding of the FXSAVE area that the kernel ignores on
 * SET (bytes 464..511 carry the kernel's fx_sw_bytes; we use part of their
 * unused padding). On a SET it finds the snapshot by that tag and hands
 * the kernel UML's bytes followed by the snapshot's upper state.
 *
 * Because the tag travels inside UML's bytes, whatever UML does with a
 * task's FP state carries the upper state along with it:
 *  - a context switch between guest tasks restores each task's own state;
 *  - a fork copies the parent's bytes, so the child starts from the
 *    parent's full state, as on a real kernel;
 *  - a signal frame stores UML's bytes and sigreturn brings them back, so
 *    the interrupted code gets its upper state back too.
 * Snapshots are immutable once made; a GET whose upper state is unchanged
 * keeps its tag. Each buffer address (a task, or UML's own scratch
 * buffers) keeps its newest snapshot; older ones go to a FIFO of RECENT
 * entries and are freed when they fall out of it. A SET whose tag is gone
 * (a signal frame or a copy older than RECENT state changes) or absent (a
 * state UML built itself, e.g. for a new process) gets the upper components
 * in their init state, with the host process's current PKRU kept if PKRU
 * is among them: what a fresh process would have. Such losses are counted
 * and reported on stderr, so they are never silent.
 *
 * Where the full image fits UML's buffer, every call passes through
 * untouched. scripts/kernel-test preloads this library only when the probe
 * (`probe`, built from this file with -DUML_XSTATE_PROBE) reports an image
 * larger than 832 bytes, the smallest buffer a UML build uses.
 *
 * UML calls ptrace from one host thread; a lock guards the tables anyway,
 * and reentry (from a signal handler on the same thread) aborts loudly
 * rather than corrupting state.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif

/* Standard format: the 512-byte FXSAVE area (x87, SSE), the 64-byte XSAVE
 * header, then each component at the offset CPUID leaf 0xD gives. */
#define XSTATE_BV_OFF 512
#define HEADER_END 576
#define PKRU_FEATURE (1ull << 9)
/* Where the tag lives: FXSAVE bytes 464..511 are software-reserved; the
 * kernel fills 464..483 with its fx_sw_bytes and leaves 484..511 as
 * padding, and never reads any of them on SET. */
#define TAG_OFF 496
#define TAG_MAGIC 0x5558ull /* "XU", in the tag's top 16 bits */
#define RECENT 1024
#define MAX_FULL (1 << 16)

#ifndef UML_XSTATE_PROBE
struct snap {
	uint64_t tag;
	uint64_t hi_bv;	  /* xstate_bv bits of the upper components */
	uint32_t len;	  /* bytes of upper state kept, from offset uml_size */
	uint32_t refs;	  /* address-table slots pointing here, plus 1 in the FIFO */
	unsigned char data[]; /* upper state: full image bytes [uml_size, uml_size+len) */
};

typedef long (*ptrace_fn)(int, pid_t, void *, void *);

static ptrace_fn real_ptrace;
static int state; /* 0 unknown, 1 active, -1 pass-through */
static size_t full_size; /* the kernel's image */
static size_t uml_size;	 /* UML's buffer, from its first call */
static uint64_t low_mask; /* components inside UML's buffer */
static uint64_t comp_end[64]; /* end offset of each upper component, 0 if none */
static unsigned char *scratch;

/* buffer address -> its newest snapshot (open addressing, grows) */
struct aslot {
	uintptr_t addr;
	struct snap *s;
};
static struct aslot *atab;
static size_t acap, aused;
/* tag -> snapshot (open addressing with tombstones, grows) */
static struct snap **ttab;
static size_t tcap, tused, tdead;
#define TOMB ((struct snap *)1)
static struct snap *fifo[RECENT];
static size_t fifo_next;
static uint64_t next_tag = 1;
static unsigned long lost, stats_set, stats_get, stats_new;
static int lock_owner;

static void die(const char *msg)
{
	fprintf(stderr, "uml-xstate: %s\n", msg);
	abort();
}

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n, sz);
	if (!p)
		die("out of memory");
	return p;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static uint64_t get_bv(const unsigned char *img)
{
	uint64_t bv;
	memcpy(&bv, img + XSTATE_BV_OFF, 8);
	return bv;
}

static void put_bv(unsigned char *img, uint64_t bv)
{
	memcpy(img + XSTATE_BV_OFF, &bv, 8);
}

static uint64_t get_tag(const unsigned char *low)
{
	uint64_t t;
	memcpy(&t, low + TAG_OFF, 8);
	return (t >> 48) == TAG_MAGIC ? t : 0;
}

/* --- tag table ---------------------------------------------------------- */

static void ttab_insert(struct snap *s);

static void ttab_grow(void)
{
	struct snap **old = ttab;
	size_t oldcap = tcap;
	tcap = tcap ? tcap * 2 : 4096;
	while (tused * 2 >= tcap)
		tcap *= 2;
	ttab = xcalloc(tcap, sizeof(*ttab));
	tused = tdead = 0;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i] && old[i] != TOMB)
			ttab_insert(old[i]);
	free(old);
}

static void ttab_insert(struct snap *s)
{
	if ((tused + tdead + 1) * 2 > tcap)
		ttab_grow();
	size_t m = tcap - 1, i = mix(s->tag) & m;
	while (ttab[i] && ttab[i] != TOMB)
		i = (i + 1) & m;
	if (ttab[i] == TOMB)
		tdead--;
	ttab[i] = s;
	tused++;
}

static struct snap *ttab_find(uint64_t tag, size_t *at)
{
	if (!tcap || !tag)
		return NULL;
	size_t m = tcap - 1, i = mix(tag) & m;
	for (; ttab[i]; i = (i + 1) & m) {
		if (ttab[i] != TOMB && ttab[i]->tag == tag) {
			if (at)
				*at = i;
			return ttab[i];
		}
	}
	return NULL;
}

static void unref(struct snap *s)
{
	if (!s || --s->refs)
		return;
	size_t at;
	if (ttab_find(s->tag, &at) == s) {
		ttab[at] = TOMB;
		tused--;
		tdead++;
	}
	free(s);
}

/* A snapshot no address holds any more stays findable for RECENT more. */
static void retire(struct snap *s)
{
	if (!s)
		return;
	s->refs++;
	unref(fifo[fifo_next]);
	fifo[fifo_next] = s;
	fifo_next = (fifo_next + 1) % RECENT;
	unref(s); /* the address's reference */
}

/* --- address table ------------------------------------------------------ */

static struct aslot *aslot_get(uintptr_t addr);

static void atab_grow(void)
{
	struct aslot *old = atab;
	size_t oldcap = acap;
	acap = acap ? acap * 2 : 1024;
	atab = xcalloc(acap, sizeof(*atab));
	aused = 0;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].addr)
			*aslot_get(old[i].addr) = old[i];
	free(old);
}

static struct aslot *aslot_get(uintptr_t addr)
{
	if ((aused + 1) * 2 > acap)
		atab_grow();
	size_t m = acap - 1, i = mix(addr) & m;
	while (atab[i].addr && atab[i].addr != addr)
		i = (i + 1) & m;
	if (!atab[i].addr) {
		atab[i].addr = addr;
		aused++;
	}
	return &atab[i];
}

/* The snapshot an address holds becomes s. */
static void hold(uintptr_t addr, struct snap *s)
{
	struct aslot *a = aslot_get(addr);
	if (a->s == s)
		return;
	s->refs++;
	retire(a->s);
	a->s = s;
}

/* --- setup -------------------------------------------------------------- */

#ifdef UML_XSTATE_TEST
static void test_layout(int comp, uint32_t r[4]);
#endif

__attribute__((unused)) static void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	__asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

/* The kernel says how big its image is: a GET into a large buffer comes
 * back with iov_len cut to the real size. */
static void setup(pid_t pid)
{
	struct iovec iov;
	uint32_t r[4];

	scratch = xcalloc(1, MAX_FULL);
	iov.iov_base = scratch;
	iov.iov_len = MAX_FULL;
	if (real_ptrace(PTRACE_GETREGSET, pid, (void *)NT_X86_XSTATE, &iov) < 0 || iov.iov_len <= uml_size) {
		state = -1;
		if (getenv("UML_XSTATE_VERBOSE"))
			fprintf(stderr, "uml-xstate: UML's %zu-byte FP buffer holds this host's XSAVE image: passing through\n",
				uml_size);
		return;
	}
	full_size = iov.iov_len;
	/* Standard-format offsets, from CPUID 0xD (ECX bit 0 marks supervisor
	 * components, which ptrace never shows). */
	low_mask = 0x3; /* x87 and SSE: the FXSAVE area */
	for (int i = 2; i < 64; i++) {
#ifdef UML_XSTATE_TEST
		test_layout(i, r);
#else
		cpuid(0xd, i, r);
#endif
		if (!r[0] || (r[2] & 1))
			continue;
		if (r[1] + r[0] <= uml_size)
			low_mask |= 1ull << i;
		else if (r[1] >= uml_size && r[1] + r[0] <= full_size)
			comp_end[i] = r[1] + r[0];
	}
	state = 1;
	if (getenv("UML_XSTATE_VERBOSE"))
		fprintf(stderr, "uml-xstate: host XSAVE image is %zu bytes, UML's FP buffer %zu: keeping the rest per task\n",
			full_size, uml_size);
}

/* Bytes of upper state the features in bv occupy past UML's buffer. */
static uint32_t upper_len(uint64_t bv)
{
	uint64_t end = uml_size;
	for (int i = 2; i < 64; i++)
		if ((bv >> i & 1) && comp_end[i] > end)
			end = comp_end[i];
	if (bv && end == uml_size) /* a feature CPUID did not place */
		end = full_size;
	return (uint32_t)(end - uml_size);
}

static void report_lost(void)
{
	if (lost == 1 || (lost & (lost - 1)) == 0)
		fprintf(stderr, "uml-xstate: %lu guest FP state restore(s) had no saved upper state (AVX-512 etc.)"
				" and started from its init state\n", lost);
}

/* --- the two calls ------------------------------------------------------ */

static long do_get(pid_t pid, struct iovec *iov)
{
	unsigned char *low = iov->iov_base;
	struct iovec full = {scratch, full_size};
	long rc = real_ptrace(PTRACE_GETREGSET, pid, (void *)NT_X86_XSTATE, &full);
	if (rc < 0)
		return rc;
	stats_get++;
	uint64_t bv = get_bv(scratch);
	uint64_t hi_bv = bv & ~low_mask;
	uint32_t len = upper_len(hi_bv);
	/* The address's newest snapshot is what the task ran with: the one
	 * this buffer last read or handed to the kernel. */
	struct snap *cur = aslot_get((uintptr_t)low)->s;
	if (!(cur && cur->hi_bv == hi_bv && cur->len == len &&
	      memcmp(cur->data, scratch + uml_size, len) == 0)) {
		struct snap *s = malloc(sizeof(*s) + len);
		if (!s)
			die("out of memory");
		s->tag = TAG_MAGIC << 48 | (next_tag++ & ((1ull << 48) - 1));
		s->hi_bv = hi_bv;
		s->len = len;
		s->refs = 0;
		memcpy(s->data, scratch + uml_size, len);
		ttab_insert(s);
		stats_new++;
		cur = s;
	}
	hold((uintptr_t)low, cur);
	memcpy(low, scratch, uml_size);
	memcpy(low + TAG_OFF, &cur->tag, 8);
	return rc;
}

static long do_set(pid_t pid, struct iovec *iov)
{
	const unsigned char *low = iov->iov_base;
	struct snap *s = ttab_find(get_tag(low), NULL);
	uint64_t hi_bv;

	stats_set++;
	if (s) {
		memset(scratch + uml_size, 0, full_size - uml_size);
		memcpy(scratch + uml_size, s->data, s->len);
		hi_bv = s->hi_bv;
		hold((uintptr_t)low, s);
	} else {
		/* No upper state of ours: init state for all of it, but the
		 * process's own PKRU stays (a missing PKRU bit would zero it). */
		struct iovec full = {scratch, full_size};
		if (real_ptrace(PTRACE_GETREGSET, pid, (void *)NT_X86_XSTATE, &full) < 0)
			return -1;
		hi_bv = get_bv(scratch) & PKRU_FEATURE & ~low_mask;
		if (get_tag(low)) { /* a tag we made and no longer have */
			lost++;
			report_lost();
		}
	}
	memcpy(scratch, low, uml_size);
	memset(scratch + TAG_OFF, 0, 8);
	memset(scratch + XSTATE_BV_OFF + 8, 0, 64 - 8); /* xcomp_bv, reserved: zero in standard format */
	put_bv(scratch, (get_bv(low) & low_mask) | hi_bv);
	struct iovec full = {scratch, full_size};
	return real_ptrace(PTRACE_SETREGSET, pid, (void *)NT_X86_XSTATE, &full);
}

#ifndef UML_XSTATE_TEST
static long sys_ptrace(int req, pid_t pid, void *addr, void *data)
{
	return syscall(SYS_ptrace, req, pid, addr, data);
}
#endif

static long intercept(int req, pid_t pid, void *addr, void *data)
{
	struct iovec *iov = data;
	if ((req != PTRACE_GETREGSET && req != PTRACE_SETREGSET) || (uintptr_t)addr != NT_X86_XSTATE || !iov ||
	    state < 0)
		return real_ptrace(req, pid, addr, data);
	/* UML's buffer size is a constant of its build: the first call shows
	 * it. A call of any other size is not UML's task state. */
	if (state == 0 && !uml_size && iov->iov_len >= HEADER_END && iov->iov_len < MAX_FULL)
		uml_size = iov->iov_len;
	if (iov->iov_len != uml_size)
		return real_ptrace(req, pid, addr, data);

	int self = (int)syscall(SYS_gettid);
	for (;;) {
		int owner = 0;
		if (__atomic_compare_exchange_n(&lock_owner, &owner, self, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			break;
		if (owner == self)
			die("ptrace re-entered from a signal handler");
	}
	long rc;
	if (state == 0)
		setup(pid);
	if (state < 0)
		rc = real_ptrace(req, pid, addr, data);
	else if (req == PTRACE_GETREGSET)
		rc = do_get(pid, iov);
	else
		rc = do_set(pid, iov);
	int e = errno;
	__atomic_store_n(&lock_owner, 0, __ATOMIC_RELEASE);
	errno = e;
	return rc;
}

#ifndef UML_XSTATE_TEST
/* glibc's ptrace(request, pid, addr, data): variadic, returns the peeked
 * word for PEEK requests; UML uses only the non-PEEK ones through here, and
 * everything else is passed on to glibc's own. */
long ptrace(enum __ptrace_request req, ...)
{
	static long (*libc_ptrace)(int, ...);
	va_list ap;
	va_start(ap, req);
	pid_t pid = va_arg(ap, pid_t);
	void *addr = va_arg(ap, void *);
	void *data = va_arg(ap, void *);
	va_end(ap);
	if (!libc_ptrace) {
		libc_ptrace = (long (*)(int, ...))dlsym(RTLD_NEXT, "ptrace");
		if (!libc_ptrace)
			die("no ptrace in libc");
	}
	if (req != PTRACE_GETREGSET && req != PTRACE_SETREGSET)
		return libc_ptrace(req, pid, addr, data);
	real_ptrace = sys_ptrace;
	return intercept(req, pid, addr, data);
}

__attribute__((destructor)) static void bye(void)
{
	if (state > 0 && getenv("UML_XSTATE_VERBOSE"))
		fprintf(stderr, "uml-xstate: %lu gets, %lu sets, %lu snapshots made, %zu buffers, %lu lost\n",
			stats_get, stats_set, stats_new, aused, lost);
}
#endif

#endif /* !UML_XSTATE_PROBE */

#ifdef UML_XSTATE_PROBE
/* uml-xstate-probe: prints the size of this host's ptrace XSAVE image. */
#include <signal.h>
#include <sys/wait.h>
int main(void)
{
	static unsigned char buf[MAX_FULL];
	struct iovec iov = {buf, sizeof(buf)};
	pid_t pid = fork();
	if (pid < 0)
		return perror("fork"), 2;
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		_exit(0);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0 || !WIFSTOPPED(st))
		return fprintf(stderr, "uml-xstate-probe: child did not stop\n"), 2;
	long rc = ptrace(PTRACE_GETREGSET, pid, (void *)NT_X86_XSTATE, &iov);
	int e = errno;
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	if (rc < 0)
		return fprintf(stderr, "uml-xstate-probe: PTRACE_GETREGSET: %s\n", strerror(e)), 2;
	printf("%zu\n", iov.iov_len);
	return 0;
}
#endif
