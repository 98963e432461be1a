// SPDX-License-Identifier: MIT
/* Finding a CPython interpreter in an ELF file: its runtime state, version and eval loop. */
#include "python.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"

struct wanted {
	const char *name;
	size_t off;             /* of the struct py_sym in struct py_probe */
};

static const struct wanted wanted[] = {
	{ "_PyRuntime", offsetof(struct py_probe, runtime) },
	{ "Py_Version", offsetof(struct py_probe, version_sym) },
	{ "_PyEval_EvalFrameDefault", offsetof(struct py_probe, eval) },
	{ "PyCode_Type", offsetof(struct py_probe, code_type) },
	{ "PyUnicode_Type", offsetof(struct py_probe, unicode_type) },
	{ "PyBytes_Type", offsetof(struct py_probe, bytes_type) },
};

/* Defined symbols of one symbol table section; .dynsym and .symtab agree where both exist. */
static void scan_symbols(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct py_probe *p)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t nr;

	if (!data || !sh->sh_entsize)
		return;
	nr = sh->sh_size / sh->sh_entsize;
	for (size_t i = 1; i < nr; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || (name[0] != '_' && name[0] != 'P'))
			continue;
		for (size_t w = 0; w < ARRAY_SIZE(wanted); w++) {
			struct py_sym *s = (struct py_sym *)((char *)p + wanted[w].off);

			if (!s->addr && !strcmp(name, wanted[w].name)) {
				s->addr = sym.st_value;
				s->size = sym.st_size;
			}
		}
	}
}

/* Reads the 4-byte little-endian value at link-time address ADDR from the section holding it. */
static bool read_u32_at(Elf *elf, uint64_t addr, uint32_t *val)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		uint64_t off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_ALLOC))
			continue;
		if (addr < sh.sh_addr || addr + 4 > sh.sh_addr + sh.sh_size)
			continue;
		data = elf_getdata(scn, NULL);
		off = addr - sh.sh_addr;
		if (!data || !data->d_buf || off + 4 > data->d_size)
			return false;
		memcpy(val, (const char *)data->d_buf + off, 4);
		return true;
	}
	return false;
}

/*
 * Before 3.11 there is no Py_Version: the version is taken from the file
 * name (libpython3.9.so.1.0, libpython3.7m.so, python3.10), which is only
 * used to say which unsupported version was found.
 */
static uint32_t version_from_name(const char *path)
{
	const char *base = path ? strrchr(path, '/') : NULL;
	const char *s;
	unsigned minor = 0;

	base = base ? base + 1 : path;
	if (!base)
		return 0;
	s = strstr(base, "python3.");
	if (!s)
		return 0;
	s += strlen("python3.");
	if (*s < '0' || *s > '9')
		return 0;
	while (*s >= '0' && *s <= '9' && minor < 100)
		minor = minor * 10 + (unsigned)(*s++ - '0');
	if (minor >= 100)
		return 0;
	return 0x03000000u | minor << 16;
}

int py_probe_file(int fd, const char *path, struct py_probe *p)
{
	int own = -1, ret = -ENOENT;
	Elf *elf = NULL;
	Elf_Scn *scn = NULL;

	memset(p, 0, sizeof(*p));
	if (fd < 0) {
		own = fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		ret = -ENOEXEC;
		goto out;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB))
			scan_symbols(elf, scn, &sh, p);
	}
	if (!p->runtime.addr)
		goto out;
	ret = 0;
	if (p->version_sym.addr && read_u32_at(elf, p->version_sym.addr, &p->version))
		goto out;
	p->version = version_from_name(path);
	p->version_from_name = p->version != 0;
out:
	if (elf)
		elf_end(elf);
	if (own >= 0)
		close(own);
	return ret;
}
