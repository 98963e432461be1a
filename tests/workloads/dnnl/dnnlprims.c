// SPDX-License-Identifier: MIT
/*
 * A oneDNN program (Debian's libdnnl2 2.6, through its C API), for the ITT
 * collector's tests: on the main thread it runs a reorder (nchw to nhwc), a
 * ReLU (eltwise) and a matmul, each N times, in that order, checks their
 * results, and prints "main TID" and "ran N". oneDNN wraps each execution in
 * an ITT task of domain "dnnl::primitive::execute" named after the primitive's
 * kind ("reorder", "eltwise", "matmul"), on the main thread and, at its
 * default ITT level 2, on each OpenMP worker that takes part.
 *
 *   dnnlprims N
 */
#define _GNU_SOURCE
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(call)                                                                      \
	do {                                                                             \
		dnnl_status_t s_ = (call);                                              \
		if (s_ != dnnl_success) {                                               \
			fprintf(stderr, "dnnlprims: %s failed: status %d\n", #call, (int)s_); \
			exit(1);                                                        \
		}                                                                       \
	} while (0)

static dnnl_engine_t engine;
static dnnl_stream_t stream;

static dnnl_memory_t memory(const dnnl_memory_desc_t *md)
{
	dnnl_memory_t m;

	CHECK(dnnl_memory_create(&m, md, engine, DNNL_MEMORY_ALLOCATE));
	return m;
}

static float *data(dnnl_memory_t m)
{
	void *p;

	CHECK(dnnl_memory_get_data_handle(m, &p));
	return p;
}

/* Creates the primitive of PD, runs it N times with ARGS, and destroys both. */
static void run(dnnl_primitive_desc_t pd, long n, int nargs, const dnnl_exec_arg_t *args)
{
	dnnl_primitive_t p;

	CHECK(dnnl_primitive_create(&p, pd));
	for (long i = 0; i < n; i++)
		CHECK(dnnl_primitive_execute(p, stream, nargs, args));
	CHECK(dnnl_stream_wait(stream));
	CHECK(dnnl_primitive_destroy(p));
	CHECK(dnnl_primitive_desc_destroy(pd));
}

int main(int argc, char **argv)
{
	const dnnl_dims_t act = { 8, 16, 32, 32 }, mat = { 64, 64 };
	const size_t nact = 8 * 16 * 32 * 32, nmat = 64 * 64;
	dnnl_memory_desc_t nchw, nhwc, sq;
	dnnl_memory_t src, dst, a, b, c;
	dnnl_primitive_desc_t pd;
	dnnl_eltwise_desc_t relu;
	dnnl_matmul_desc_t mm;
	long n = argc == 2 ? strtol(argv[1], NULL, 10) : 0;
	int bad = 0;

	if (n <= 0) {
		fprintf(stderr, "usage: dnnlprims N\n");
		return 2;
	}
	printf("main %d\n", (int)gettid());
	fflush(stdout);
	CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0));
	CHECK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
	CHECK(dnnl_memory_desc_init_by_tag(&nchw, 4, act, dnnl_f32, dnnl_nchw));
	CHECK(dnnl_memory_desc_init_by_tag(&nhwc, 4, act, dnnl_f32, dnnl_nhwc));
	CHECK(dnnl_memory_desc_init_by_tag(&sq, 2, mat, dnnl_f32, dnnl_ab));
	src = memory(&nchw);
	dst = memory(&nhwc);
	a = memory(&sq);
	b = memory(&sq);
	c = memory(&sq);
	for (size_t i = 0; i < nact; i++)
		data(src)[i] = (float)((long)(i % 7) - 3);
	for (size_t i = 0; i < nmat; i++) {
		data(a)[i] = 1.0f;
		data(b)[i] = 2.0f;
	}

	CHECK(dnnl_reorder_primitive_desc_create(&pd, &nchw, engine, &nhwc, engine, NULL));
	run(pd, n, 2, (dnnl_exec_arg_t[]){ { DNNL_ARG_FROM, src }, { DNNL_ARG_TO, dst } });
	/* element (n, c, h, w) of nhwc is at ((n * H + h) * W + w) * C + c */
	bad |= data(dst)[1] != data(src)[32 * 32];

	CHECK(dnnl_eltwise_forward_desc_init(&relu, dnnl_forward_inference, dnnl_eltwise_relu, &nchw, 0, 0));
	CHECK(dnnl_primitive_desc_create(&pd, &relu, NULL, engine, NULL));
	run(pd, n, 2, (dnnl_exec_arg_t[]){ { DNNL_ARG_SRC, src }, { DNNL_ARG_DST, src } });
	for (size_t i = 0; i < nact; i++)
		bad |= data(src)[i] != (float)(i % 7 > 3 ? i % 7 - 3 : 0);

	CHECK(dnnl_matmul_desc_init(&mm, &sq, &sq, NULL, &sq));
	CHECK(dnnl_primitive_desc_create(&pd, &mm, NULL, engine, NULL));
	run(pd, n, 3, (dnnl_exec_arg_t[]){ { DNNL_ARG_SRC, a }, { DNNL_ARG_WEIGHTS, b }, { DNNL_ARG_DST, c } });
	bad |= data(c)[0] != 128.0f || data(c)[nmat - 1] != 128.0f;

	CHECK(dnnl_memory_destroy(src));
	CHECK(dnnl_memory_destroy(dst));
	CHECK(dnnl_memory_destroy(a));
	CHECK(dnnl_memory_destroy(b));
	CHECK(dnnl_memory_destroy(c));
	CHECK(dnnl_stream_destroy(stream));
	CHECK(dnnl_engine_destroy(engine));
	if (bad) {
		fprintf(stderr, "dnnlprims: wrong results\n");
		return 1;
	}
	printf("ran %ld\n", n);
	return 0;
}
