/*
 * uml-xstate-test.c: checks uml-xstate.c against a fake host kernel whose
 * XSAVE image is larger than UML's 832 bytes, driven the way UML drives
 * ptrace: per-task 832-byte buffers, several tasks per host process
 * (threads), fork (the buffer is copied), signal frames (the buffer is
 * saved and brought back at sigreturn), UML's saved initial state for new
 * processes, long sleepers while others churn through thousands of states,
 * and frames so old their upper state is gone.
 *
 * The fake kernel behaves like Linux's xstateregs_get/set: a GET copies a
 * prefix of the standard-format image and cuts iov_len to what it copied;
 * a SET wants exactly the full size (else EFAULT), a zero xcomp_bv and
 * reserved header (else EINVAL), takes the components whose xstate_bv bit
 * is set and puts the others in their init state (zero), PKRU included.
 *
 * Built and run by internal/testbed's TestUMLXstateShim:
 *   gcc -DUML_XSTATE_TEST -fsanitize=address,undefined uml-xstate-test.c
 * Exit status 0 and a last line "uml-xstate-test: ok ..." when every check
 * held; otherwise it names the first check that failed.
 */
#define UML_XSTATE_TEST
#include "uml-xstate.c"

/* UML's buffer: 832 (x87..AVX) or 2696 (..AVX-512, PKRU), -DUMLSZ=... */
#ifndef UMLSZ
#define UMLSZ 832
#endif

/* A layout like a Sapphire Rapids host: AVX-512 (opmask, ZMM_Hi256,
 * Hi16_ZMM), PKRU, AMX (TILECFG, TILEDATA). */
struct comp {
	int bit;
	uint32_t off, size;
};
static const struct comp layout[] = {
	{2, 576, 256}, {5, 1088, 64}, {6, 1152, 512}, {7, 1664, 1024}, {9, 2688, 8}, {17, 2752, 64}, {18, 2816, 8192},
};
#define NCOMP (sizeof(layout) / sizeof(layout[0]))
static size_t fake_full = 2816 + 8192;

static void test_layout(int bit, uint32_t r[4])
{
	memset(r, 0, 4 * sizeof(r[0]));
	for (size_t i = 0; i < NCOMP; i++)
		if (layout[i].bit == bit) {
			r[0] = layout[i].size;
			r[1] = layout[i].off;
		}
}

#define MAXPID 64
static unsigned char hw[MAXPID][MAX_FULL]; /* each fake host process's registers */
static unsigned long n_get, n_set;

static const char *phase = "boot";
#define CHECK(cond, ...)                                                                  \
	do {                                                                              \
		if (!(cond)) {                                                            \
			fprintf(stderr, "uml-xstate-test: FAIL %s:%d (%s): ", __FILE__, __LINE__, phase); \
			fprintf(stderr, __VA_ARGS__);                                     \
			fprintf(stderr, "\n");                                            \
			exit(1);                                                          \
		}                                                                         \
	} while (0)

/* Zero what is not architectural state: reserved FXSAVE bytes, the header
 * beyond xstate_bv, components whose bit is clear. Two images hold the
 * same registers when their canonical forms are equal. */
static void canon(unsigned char *img)
{
	uint64_t bv = get_bv(img);
	memset(img + 416, 0, 96);
	memset(img + XSTATE_BV_OFF + 8, 0, 56);
	if (!(bv & 1))
		memset(img, 0, 160);
	if (!(bv & 2))
		memset(img + 160, 0, 256);
	for (size_t i = 0; i < NCOMP; i++)
		if (!(bv >> layout[i].bit & 1))
			memset(img + layout[i].off, 0, layout[i].size);
}

static long fake_ptrace(int req, pid_t pid, void *addr, void *data)
{
	struct iovec *iov = data;
	CHECK(pid > 0 && pid < MAXPID, "bad pid %d", pid);
	CHECK((uintptr_t)addr == NT_X86_XSTATE, "regset %#lx", (unsigned long)(uintptr_t)addr);
	if (req == PTRACE_GETREGSET) {
		n_get++;
		size_t n = iov->iov_len < fake_full ? iov->iov_len : fake_full;
		memcpy(iov->iov_base, hw[pid], n);
		/* the kernel's fx_sw_bytes: magic1 and sizes, then zero padding */
		if (n >= 512) {
			uint32_t sw[12] = {0x46505853u, (uint32_t)fake_full + 4, 0x602e7, 0, (uint32_t)fake_full};
			memcpy((unsigned char *)iov->iov_base + 464, sw, sizeof(sw));
		}
		iov->iov_len = n;
		return 0;
	}
	CHECK(req == PTRACE_SETREGSET, "request %d", req);
	n_set++;
	if (iov->iov_len != fake_full) {
		errno = EFAULT;
		return -1;
	}
	unsigned char *img = iov->iov_base;
	for (int i = 8; i < 64; i++)
		if (img[XSTATE_BV_OFF + i]) {
			errno = EINVAL;
			return -1;
		}
	memcpy(hw[pid], img, fake_full);
	canon(hw[pid]);
	return 0;
}

/* --- a model of UML ------------------------------------------------------ */

struct task {
	pid_t pid;
	unsigned char *buf; /* UML's 832 bytes, inside the task */
	unsigned char want[MAX_FULL]; /* the registers the task must see next */
	int alive;
};
#define NTASK 48
static struct task tasks[NTASK];
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void fill(unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)rnd();
}

/* The task computes on the CPU: its registers change (with a valid MXCSR),
 * components come into use. TILEDATA never does: guests cannot ask for AMX
 * permission under UML. avx512 = 0 leaves the upper state alone. */
static const struct comp *comp(int bit)
{
	for (size_t i = 0; i < NCOMP; i++)
		if (layout[i].bit == bit)
			return &layout[i];
	abort();
}

static void compute(pid_t pid, int avx512)
{
	unsigned char *img = hw[pid];
	uint64_t bv = get_bv(img) | 0x7;
	fill(img, 24);
	fill(img + 32, 128);
	uint32_t mxcsr = 0x1f80 | (uint32_t)(rnd() & 0x3f);
	memcpy(img + 24, &mxcsr, 4);
	fill(img + 160, 256);
	fill(img + 576, 256);
	if (avx512) {
		bv |= 1u << 5 | 1u << 6 | 1u << 7;
		for (int b = 5; b <= 7; b++)
			fill(img + comp(b)->off, comp(b)->size);
		if (rnd() % 4 == 0) {
			bv |= 1u << 9;
			fill(img + comp(9)->off, 4);
		}
		if (rnd() % 4 == 0) { /* AMX, which UML guests cannot ask for today */
			bv |= 1u << 17 | 1u << 18;
			fill(img + comp(17)->off, comp(17)->size);
			fill(img + comp(18)->off + (rnd() % 8) * 1024, 1024);
		}
	}
	put_bv(img, bv);
	canon(img);
}

/* One trip to user space and back, as UML's userspace() loop makes it. */
static void run(struct task *t, int avx512)
{
	struct iovec iov = {t->buf, UMLSZ};
	/* another task of the same process may have run here: clobber */
	fill(hw[t->pid] + 1088, 64);
	CHECK(intercept(PTRACE_SETREGSET, t->pid, (void *)NT_X86_XSTATE, &iov) == 0, "SETREGSET: %s",
	      strerror(errno));
	size_t d = 0;
	while (d < fake_full && hw[t->pid][d] == t->want[d])
		d++;
	CHECK(d == fake_full, "task %ld resumed with wrong registers (first at byte %zu)", (long)(t - tasks), d);
	compute(t->pid, avx512);
	memcpy(t->want, hw[t->pid], fake_full);
	iov.iov_len = UMLSZ;
	CHECK(intercept(PTRACE_GETREGSET, t->pid, (void *)NT_X86_XSTATE, &iov) == 0, "GETREGSET");
	CHECK(iov.iov_len == UMLSZ, "GET told UML %zu bytes", iov.iov_len);
	CHECK(memcmp(t->buf, hw[t->pid], 464) == 0 && memcmp(t->buf + 512, hw[t->pid] + 512, UMLSZ - 512) == 0,
	      "UML's 832 bytes are not the registers");
}

/* A trip to user space that changes only the component top, past UML's
 * buffer (a handler's EVEX memcpy, say). */
static void run_top(struct task *t, const struct comp *top)
{
	struct iovec iov = {t->buf, UMLSZ};
	CHECK(intercept(PTRACE_SETREGSET, t->pid, (void *)NT_X86_XSTATE, &iov) == 0, "SET");
	fill(hw[t->pid] + top->off, top->size);
	put_bv(hw[t->pid], get_bv(hw[t->pid]) | 1ull << top->bit | (top->bit == 18 ? 1ull << 17 : 0));
	canon(hw[t->pid]);
	memcpy(t->want, hw[t->pid], fake_full);
	CHECK(intercept(PTRACE_GETREGSET, t->pid, (void *)NT_X86_XSTATE, &iov) == 0, "GET");
}

static struct task *spawn(int idx, pid_t pid, const unsigned char *from_buf, const unsigned char *from_want)
{
	struct task *t = &tasks[idx];
	if (!t->buf)
		t->buf = malloc(UMLSZ);
	memcpy(t->buf, from_buf, UMLSZ);
	memcpy(t->want, from_want, fake_full);
	t->pid = pid;
	t->alive = 1;
	return t;
}

int main(void)
{
	real_ptrace = fake_ptrace;
	static unsigned char exec_buf[UMLSZ], pristine[MAX_FULL];

	/* Boot: UML reads a pristine process's state once (exec_fp_regs).
	 * Host processes start with PKRU set, as Linux's init_pkru does. */
	for (int p = 1; p < MAXPID; p++) {
		uint32_t pkru = 0x55555554;
		put_bv(hw[p], 0x3 | 1u << 9);
		memcpy(hw[p] + 24, &(uint32_t){0x1f80}, 4);
		memcpy(hw[p] + comp(9)->off, &pkru, 4);
	}
	struct iovec iov = {exec_buf, UMLSZ};
	CHECK(intercept(PTRACE_GETREGSET, 1, (void *)NT_X86_XSTATE, &iov) == 0, "boot GET");
	CHECK(state == 1 && full_size == fake_full, "shim inactive: state %d size %zu", state, full_size);
	memcpy(pristine, hw[1], fake_full);

	/* A SET of UML's size alone, as stock UML does it, is what fails. */
	iov.iov_len = UMLSZ;
	CHECK(fake_ptrace(PTRACE_SETREGSET, 1, (void *)NT_X86_XSTATE, &iov) < 0 && errno == EFAULT,
	      "the fake kernel accepts a short SET: the test proves nothing");

	/* Processes 1..12, two threads each in some; all use AVX-512. */
	int n = 0;
	for (pid_t p = 1; p <= 12; p++) {
		spawn(n++, p, exec_buf, pristine);
		if (p % 2 == 0)
			spawn(n++, p, exec_buf, pristine);
	}
	phase = "mixed tasks";
	int first = n;
	for (int round = 0; round < 3000; round++) {
		struct task *t = &tasks[rnd() % first];
		run(t, rnd() % 8 != 0);
	}

	/* fork: the child's buffer is a copy; it starts with the parent's
	 * full state, upper part included. */
	phase = "fork";
	struct task *parent = &tasks[0];
	run(parent, 1);
	struct task *child = spawn(n++, 20, parent->buf, parent->want);
	memcpy(hw[20], hw[parent->pid], fake_full); /* what the host fork would give is irrelevant: clobber */
	fill(hw[20] + 1152, 512);
	run(parent, 1);
	run(parent, 1);
	run(child, 1);

	/* A signal: UML saves its bytes in the frame, the handler runs and
	 * changes only registers past UML's buffer (with 832 bytes: ymm16-31,
	 * which EVEX string functions use), sigreturn brings the frame back. */
	phase = "signal";
	const struct comp *top = comp(UMLSZ > 832 ? 18 : 7);
	struct task *sig = &tasks[1];
	run(sig, 1);
	unsigned char frame[UMLSZ], frame_want[MAX_FULL];
	memcpy(frame, sig->buf, UMLSZ);
	memcpy(frame_want, sig->want, fake_full);
	for (int i = 0; i < 5; i++) {
		run_top(sig, top);
		CHECK(memcmp(sig->buf, frame, UMLSZ) != 0, "handler state has the frame's tag");
	}
	memcpy(sig->buf, frame, UMLSZ);
	memcpy(sig->want, frame_want, fake_full);
	run(sig, 1);

	/* A long sleeper keeps its state while the others make far more than
	 * RECENT new states. */
	phase = "sleeper";
	struct task *sleeper = &tasks[2];
	run(sleeper, 1);
	for (int i = 0; i < 4 * RECENT; i++)
		run(&tasks[3 + rnd() % (first - 3)], 1);
	run(sleeper, 1);

	/* exec: UML copies its saved initial state in: the pristine state,
	 * long after boot. */
	phase = "exec";
	struct task *ex = &tasks[3];
	memcpy(ex->buf, exec_buf, UMLSZ);
	memcpy(ex->want, pristine, fake_full);
	run(ex, 1);

	/* A frame older than RECENT state changes: its upper state is gone.
	 * The shim says so and starts the upper state from init, keeping the
	 * process's PKRU; UML's bytes are the frame's. */
	phase = "lost frame";
	struct task *old = &tasks[4];
	run(old, 1);
	memcpy(frame, old->buf, UMLSZ);
	for (int i = 0; i < 2 * RECENT; i++)
		run_top(old, top);
	uint32_t pkru_now, pkru_frame;
	memcpy(&pkru_now, hw[old->pid] + comp(9)->off, 4);
	pkru_frame = 0;
	if (comp(9)->off + 4 <= UMLSZ) /* UML holds PKRU */
		memcpy(&pkru_frame, frame + comp(9)->off, 4);
	unsigned long lost_before = lost;
	memcpy(old->buf, frame, UMLSZ);
	iov.iov_base = old->buf;
	iov.iov_len = UMLSZ;
	CHECK(intercept(PTRACE_SETREGSET, old->pid, (void *)NT_X86_XSTATE, &iov) == 0, "old frame SET");
	CHECK(lost == lost_before + 1, "a lost upper state was not counted");
	uint64_t bv = get_bv(hw[old->pid]);
	int pkru_upper = !(low_mask & PKRU_FEATURE);
	CHECK((bv & ~low_mask) == (pkru_upper ? PKRU_FEATURE : 0), "upper features after loss: %#llx",
	      (unsigned long long)bv);
	uint32_t pkru_after;
	memcpy(&pkru_after, hw[old->pid] + comp(9)->off, 4);
	if (!(bv & PKRU_FEATURE))
		pkru_after = 0;
	if (!(get_bv(frame) & PKRU_FEATURE))
		pkru_frame = 0;
	CHECK(pkru_after == (pkru_upper ? pkru_now : pkru_frame), "PKRU %#x after loss", pkru_after);
	CHECK(memcmp(hw[old->pid] + 160, frame + 160, 256) == 0, "xmm registers are not the frame's");

	/* Memory stays bounded: the buffers UML used, plus RECENT. */
	size_t live = 0;
	for (size_t i = 0; i < tcap; i++)
		live += ttab[i] && ttab[i] != TOMB;
	CHECK(live <= aused + RECENT, "%zu snapshots live for %zu buffers", live, aused);

	/* Snapshots are compact: they keep the components in use, up to the
	 * end of the last one, not the whole image. */
	for (size_t i = 0; i < tcap; i++) {
		struct snap *sn = ttab[i];
		if (!sn || sn == TOMB)
			continue;
		uint32_t end = UMLSZ;
		for (size_t c = 0; c < NCOMP; c++)
			if ((sn->hi_bv >> layout[c].bit & 1) && layout[c].off + layout[c].size > end)
				end = layout[c].off + layout[c].size;
		CHECK(sn->len == end - UMLSZ, "a snapshot keeps %u bytes, not %u", sn->len, end - UMLSZ);
	}

	printf("uml-xstate-test: ok: UML buffer %d bytes, %lu GETs, %lu SETs to a %zu-byte fake kernel; "
	       "%lu snapshots made, %zu live, %zu buffers, %lu lost (1 expected)\n",
	       UMLSZ, n_get, n_set, fake_full, stats_new, live, aused, lost);
	return 0;
}
