// SPDX-License-Identifier: MIT
// C++ names to demangle: a namespaced class, a template and an overload.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace model {

template <typename T> class Layer {
public:
	__attribute__((noinline)) T forward(T x, std::uint64_t n) const
	{
		for (std::uint64_t i = 0; i < n; i++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			asm volatile("" : "+r" (x));
		}
		return x;
	}
};

__attribute__((noinline)) std::uint64_t train_step(const Layer<std::uint64_t> &l, std::uint64_t n)
{
	return l.forward(n, n);
}

} // namespace model

static volatile std::uint64_t sink;

int main(int argc, char **argv)
{
	double scale = argc > 1 ? std::strtod(argv[1], nullptr) : 1.0;
	model::Layer<std::uint64_t> layer;

	if (!(scale > 0) || scale > 1e6) {
		std::fprintf(stderr, "usage: cxx [SCALE]\n");
		return 2;
	}
	for (int i = 0; i < 100; i++)
		sink += model::train_step(layer, static_cast<std::uint64_t>(5e6 * scale));
	return 0;
}
