// SPDX-License-Identifier: MIT
/* libFuzzer target: symbolizing and unwinding through a hostile ELF/DWARF file. */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile/profile.h"
#include "symbolize/internal.h"
#include "symbolize/symbolize.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__lsan_default_suppressions(void);

/*
 * Leaks inside elfutils (0.188) that no caller can avoid:
 * - dwarf_getscopes drops its scope array when the second pass over a
 *   corrupt CU fails after the first found the address: it returns -1
 *   without handing the array back ("if (result > 0) *scopes = a.scopes");
 * - a module whose build-id names a file in /usr/lib/debug/.build-id that
 *   then does not fit loses that file's Elf handle and name (reached from
 *   dwfl_module_addrinfo through dwfl_build_id_find_debuginfo), though
 *   dwfl_end is called.
 * ASan's fast unwinder stops at the first libdw or libelf frame (no frame
 * pointers), so the functions cannot be named: every block the two
 * libraries allocate is let go. What we must free ourselves (scopes,
 * frames, our own elf_begin) is freed by code in view of the unwinder.
 */
const char *__lsan_default_suppressions(void)
{
	return "leak:libdw.so\nleak:libelf.so\n";
}

/* Where the fake process maps the file, and its pid: one that cannot exist (> pid_max). */
#define MAP_START 0x555555554000ull
#define FAKE_PID 0x7ffffff0
#define FAKE_SP 0x7ffd00000000ull
#define MAX_ADDRS 24
#define MAX_LOADS 4

/*
 * The file lives in a directory of its own: libdwfl looks for a
 * .gnu_debuglink target next to it, and that name comes from the input.
 */
static char dir[4096], path[4096 + 16];

static void remove_dir(void)
{
	unlink(path);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");

	(void)argc;
	(void)argv;
	snprintf(dir, sizeof(dir), "%s/proftool-fuzz-elf-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/target", dir);
	atexit(remove_dir);
	elf_version(EV_CURRENT);
	return 0;
}

static void write_file(const uint8_t *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || write(fd, data, size) != (ssize_t)size || close(fd))
		abort();
}

/* What the fuzzer takes from the file, the way any ELF consumer would find it. */
struct target {
	uint64_t addrs[MAX_ADDRS];      /* entry point and function symbols, link-time */
	size_t nr_addrs;
	GElf_Phdr loads[MAX_LOADS];     /* executable PT_LOAD segments */
	size_t nr_loads;
};

static void read_target(struct target *t)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	size_t phnum;

	memset(t, 0, sizeof(*t));
	if (fd < 0)
		return;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && gelf_getehdr(elf, &eh))
		t->addrs[t->nr_addrs++] = eh.e_entry;
	for (size_t i = 0; elf && elf_getphdrnum(elf, &phnum) == 0 && i < phnum &&
	     t->nr_loads < MAX_LOADS; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
			t->loads[t->nr_loads++] = ph;
	}
	while (elf && t->nr_addrs < MAX_ADDRS && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		d = elf_getdata(scn, NULL);
		for (int i = 0; d && t->nr_addrs < MAX_ADDRS; i++) {
			GElf_Sym sym;

			if (!gelf_getsym(d, i, &sym))
				break;
			if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_value)
				continue;
			/* its first instruction (CFA = SP + 8), and one inside it */
			t->addrs[t->nr_addrs++] = sym.st_value;
			if (sym.st_size > 1 && t->nr_addrs < MAX_ADDRS)
				t->addrs[t->nr_addrs++] = sym.st_value + sym.st_size / 2;
		}
	}
	elf_end(elf);
	close(fd);
}

/* The internal entry points, one by one, at link-time addresses. */
static void symbolize_direct(const struct target *t)
{
	struct sym_elf *e = sym_elf_open(path, -1);
	struct sym_frame fr[SYM_MAX_INLINE];
	int fd;

	if (!e)
		return;
	for (size_t i = 0; i < t->nr_addrs; i++) {
		uint64_t start, v, vaddr = t->addrs[i];
		int k = sym_elf_resolve(e, vaddr, fr);

		if (k < 0 || k > SYM_MAX_INLINE)
			abort();
		/* every frame the symbolizer hands out is readable */
		for (int j = 0; j < k; j++) {
			if (fr[j].func)
				(void)strlen(fr[j].func);
			if (fr[j].file)
				(void)strlen(fr[j].file);
		}
		sym_elf_func_start(e, vaddr, &start);
		sym_elf_offset_to_vaddr(e, vaddr & 0xfffff, &v);
	}
	sym_elf_close(e);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		uint64_t bias;

		for (uint64_t pgoff = 0; pgoff < 0x4000; pgoff += 0x1000)
			sym_elf_bias(fd, MAP_START + pgoff, pgoff, &bias);
		close(fd);
	}
}

/*
 * The whole pipeline as record sees it: a process maps the file, takes a
 * frame-pointer sample through every interesting address and a DWARF
 * sample whose stack copy is made of return addresses into the file, so
 * that the unwinder walks its CFI.
 */
static void symbolize_session(const uint8_t *data, size_t size, const struct target *t)
{
	size_t n = t->nr_addrs;
	struct sym_session *ss = sym_session_new(&(struct sym_opts){ .weight_ns = 1000000 });
	uint64_t chain[MAX_ADDRS + 1], regs[20] = { 0 }, stack[64];
	struct sampler_rec r;
	struct profile *p;

	memset(&r, 0, sizeof(r));
	r.type = SAMPLER_REC_COMM;
	r.pid = r.tid = FAKE_PID;
	r.comm.comm = "fuzz";
	r.comm.exec = true;
	sym_session_add(ss, &r);

	memset(&r, 0, sizeof(r));
	r.type = SAMPLER_REC_MMAP;
	r.pid = r.tid = FAKE_PID;
	r.mmap.start = MAP_START;
	r.mmap.len = (size + 0xfff) & ~0xfffull;
	r.mmap.prot = 5; /* PROT_READ | PROT_EXEC */
	r.mmap.filename = path;
	sym_session_add(ss, &r);
	/*
	 * Then each executable segment over it, as ld.so maps them: the
	 * address space is cut where they land. Lengths stay sane, as the
	 * kernel's records are.
	 */
	for (size_t i = 0; i < t->nr_loads; i++) {
		const GElf_Phdr *ph = &t->loads[i];
		uint64_t in_page = ph->p_vaddr & 0xfff;

		r.mmap.start = MAP_START + (ph->p_vaddr & 0xfffff000ull);
		r.mmap.len = ((ph->p_memsz & 0xfffffff) + in_page + 0xfff) & ~0xfffull;
		r.mmap.pgoff = ph->p_offset & 0xfffff000ull;
		sym_session_add(ss, &r);
	}

	/* the file is mapped whole from offset 0, so a link-time address is most often the offset */
	for (size_t i = 0; i < n; i++)
		chain[i] = MAP_START + (t->addrs[i] & 0xffffff);
	chain[n] = MAP_START + size / 2;
	memset(&r, 0, sizeof(r));
	r.type = SAMPLER_REC_SAMPLE;
	r.time = 1000;
	r.pid = r.tid = FAKE_PID;
	r.sample.ip = chain[0];
	r.sample.user = true;
	r.sample.chain = chain;
	r.sample.nr_chain = n + 1;
	sym_session_add(ss, &r);

	/*
	 * The sample is taken at a function's first instruction, so the
	 * return address is at SP; deeper slots hold more return addresses,
	 * saved frame pointers and bytes of the input, wherever the file's
	 * CFI says the caller's frame is.
	 */
	for (size_t i = 0; i < ARRAY_SIZE(stack); i++) {
		if (i % 2 == 0)
			stack[i] = chain[(i / 2 + 2) % (n + 1)] + 1;
		else if (i % 4 == 1)
			stack[i] = FAKE_SP + 8 * (i + 3);
		else if (size >= 8)
			memcpy(&stack[i], data + (i * 8) % (size - 7), 8);
		else
			stack[i] = 0;
	}
	regs[8] = chain[n > 1];         /* IP: the first function symbol, or the entry point */
	regs[7] = FAKE_SP;              /* SP */
	regs[6] = FAKE_SP + 16;         /* BP */
	memset(&r, 0, sizeof(r));
	r.type = SAMPLER_REC_SAMPLE;
	r.time = 2000;
	r.pid = r.tid = FAKE_PID;
	r.sample.ip = chain[0];
	r.sample.user = true;
	r.sample.regs = regs;
	r.sample.regs_mask = 0xff0fff;
	r.sample.stack = (const uint8_t *)stack;
	r.sample.stack_size = sizeof(stack);
	sym_session_add(ss, &r);

	p = sym_session_finish(ss, NULL, NULL);
	if (p->nr_samples != 2)
		abort();
	profile_free(p);
	sym_session_free(ss);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct target t;

	write_file(data, size);
	read_target(&t);
	symbolize_direct(&t);
	symbolize_session(data, size, &t);
	return 0;
}
