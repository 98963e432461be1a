// SPDX-License-Identifier: MIT
/*
 * Inside libproftool-rt.so: what rt.c (the event writer) offers the other
 * front doors built into the same library (itt.c, the ITT collector).
 * Hidden: nothing here is exported from the library.
 */
#ifndef PROFTOOL_REGIONS_RT_H
#define PROFTOOL_REGIONS_RT_H

/*
 * Writes one event of KIND (enum rgn_kind) for the region NAME in DOMAIN
 * ("" or NULL for the default domain) on the calling thread, as
 * <proftool.h>'s calls do; PAUSE and RESUME ignore both names. Sets the
 * process's file up at the first call and does nothing when the program is
 * not recorded (PROFTOOL_REGIONS unset, or no file could be made). Names
 * are copied; stable pointers (the same text at the same address) are the
 * fast path. A NULL NAME for BEGIN, END or MARK writes nothing and counts
 * one event dropped in the file's header. Never blocks on anything but the
 * first sight of a name, never fails: what cannot be written is counted
 * dropped. Thread-safe, async-signal-unsafe.
 */
void rt_event(const char *domain, const char *name, int kind) __attribute__((visibility("hidden")));

#endif
