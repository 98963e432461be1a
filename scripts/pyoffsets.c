// SPDX-License-Identifier: MIT
/*
 * Prints the offsets symbolize/python.c needs as one `struct py_layout`
 * initializer, from the headers of the CPython it is compiled against.
 * Not part of the build: scripts/pyoffsets.sh compiles it once per version
 * (-DPy_BUILD_CORE, the internal headers) and writes symbolize/pyoffsets.c.
 * x86-64 release (GIL) builds only; offsets are stable within a minor version.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>

#include "internal/pycore_code.h"
#include "internal/pycore_frame.h"
#include "internal/pycore_interp.h"
#include "internal/pycore_runtime.h"

#if PY_VERSION_HEX < 0x030b0000 || PY_VERSION_HEX >= 0x030d0000
#error "tables are for 3.11 and 3.12; 3.13+ carries _Py_DebugOffsets"
#endif
#ifdef Py_GIL_DISABLED
#error "free-threaded builds are not supported"
#endif

#define OFF(type, member) ((unsigned)offsetof(type, member))

int main(void)
{
	_Static_assert(offsetof(PyObject, ob_type) == 8, "ob_type is the second word");

	printf("\t{\n");
	printf("\t\t.version = 0x%08x, /* headers of %s */\n", (unsigned)(PY_VERSION_HEX & 0xffff0000), PY_VERSION);
	printf("\t\t.runtime_interp_head = %u,\n", OFF(_PyRuntimeState, interpreters.head));
	printf("\t\t.interp_next = %u,\n", OFF(PyInterpreterState, next));
	printf("\t\t.interp_threads_head = %u,\n", OFF(PyInterpreterState, threads.head));
	printf("\t\t.tstate_next = %u,\n", OFF(PyThreadState, next));
	printf("\t\t.tstate_native_tid = %u,\n", OFF(PyThreadState, native_thread_id));
	printf("\t\t.tstate_cframe = %u,\n", OFF(PyThreadState, cframe));
	printf("\t\t.cframe_current_frame = %u,\n", OFF(_PyCFrame, current_frame));
	printf("\t\t.frame_code = %u,\n", OFF(_PyInterpreterFrame, f_code));
	printf("\t\t.frame_previous = %u,\n", OFF(_PyInterpreterFrame, previous));
	printf("\t\t.frame_instr = %u,\n", OFF(_PyInterpreterFrame, prev_instr));
	printf("\t\t.frame_owner = %u,\n", OFF(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX < 0x030c0000
	printf("\t\t.frame_is_entry = %u,\n", OFF(_PyInterpreterFrame, is_entry));
	printf("\t\t.owned_by_cstack = PY_OWNER_NONE,\n");
#else
	printf("\t\t.frame_is_entry = PY_OFF_NONE,\n");
	printf("\t\t.owned_by_cstack = %u,\n", (unsigned)FRAME_OWNED_BY_CSTACK);
#endif
	printf("\t\t.frame_size = %u,\n", OFF(_PyInterpreterFrame, localsplus));
	printf("\t\t.code_filename = %u,\n", OFF(PyCodeObject, co_filename));
	printf("\t\t.code_qualname = %u,\n", OFF(PyCodeObject, co_qualname));
	printf("\t\t.code_linetable = %u,\n", OFF(PyCodeObject, co_linetable));
	printf("\t\t.code_firstlineno = %u,\n", OFF(PyCodeObject, co_firstlineno));
	printf("\t\t.code_adaptive = %u,\n", OFF(PyCodeObject, co_code_adaptive));
	printf("\t\t.str_length = %u,\n", OFF(PyASCIIObject, length));
	printf("\t\t.str_state = %u,\n", OFF(PyASCIIObject, state));
	printf("\t\t.str_ascii_size = %u,\n", (unsigned)sizeof(PyASCIIObject));
	printf("\t\t.str_utf8_length = %u,\n", OFF(PyCompactUnicodeObject, utf8_length));
	printf("\t\t.str_utf8 = %u,\n", OFF(PyCompactUnicodeObject, utf8));
	printf("\t\t.str_compact_size = %u,\n", (unsigned)sizeof(PyCompactUnicodeObject));
	printf("\t\t.bytes_size = %u,\n", OFF(PyVarObject, ob_size));
	printf("\t\t.bytes_sval = %u,\n", OFF(PyBytesObject, ob_sval));
	printf("\t},\n");
	return 0;
}
