// SPDX-License-Identifier: MIT
/*
 * Names are bytes: command lines, paths, symbols and Python names are
 * whatever the system gave, valid UTF-8 or not. These check them and make
 * them printable (reports) or storable in JSON (the profile file) without
 * losing a byte.
 */
#ifndef PROFTOOL_BASE_TEXT_H
#define PROFTOOL_BASE_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The length (1-4) of the UTF-8 character S begins with, or 0 when the
 * byte at S does not begin a valid one: overlong forms, surrogates and
 * code points past U+10FFFF are not valid, as RFC 3629 says. S is a C
 * string (the check stops at its NUL).
 */
size_t text_utf8_len(const char *s);
/* Whether every byte of S belongs to a valid UTF-8 character. */
bool text_is_utf8(const char *s);

/*
 * S as reports print it: every byte that is not part of a valid UTF-8
 * character as "\xNN" (lower-case hex), everything else as it is (control
 * characters too: each format deals with them as it must, JSON escapes
 * them, folded stacks blank line breaks). Returns NULL when S prints as it
 * is, else a string the caller frees.
 */
char *text_printable(const char *s);

/*
 * Reversible forms for storage in JSON, whose strings must be UTF-8:
 * text_bytes_encode() returns NULL when S is valid UTF-8 (store it as it
 * is), else S with '\' written "\\" and every byte that is not part of a
 * valid UTF-8 character "\xNN": valid UTF-8, to free. text_bytes_decode()
 * turns that back into the bytes; NULL when T is not such a form (an
 * escape other than those two, or one that would give a NUL byte).
 */
char *text_bytes_encode(const char *s);
char *text_bytes_decode(const char *t);

#endif
