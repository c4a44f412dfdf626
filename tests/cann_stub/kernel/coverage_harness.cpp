// Coverage harness for the example vector kernels (tests/test_kernel_coverage.py).
//
// Built with one kernel, the kernel_operator.h stand-in, -fsanitize=address,undefined, and:
//   -DOP_<NAME>                  which operator (ADD MUL FLOOR_MOD GELU SWIGLU CAST
//   BROADCAST_MUL SOFTMAX RMSNORM LAYERNORM) -DKERNEL_ENTRY=<snake>       the kernel's extern "C" entry -DDTYPE_<ARG>=<type>
//   tensor element types, as the AscendC build defines them -DASCEND_TUNE_KERNEL_TILING=<Struct>
//   -include <snake>_tiling.h   (the emitted struct header) coverage_tiling.inc on the include
//   path: kFieldCount and FillTiling(Struct&, const double*)
//
// stdin, one case per line:  id blockDim tilingKey nShape shape... seed nFields fields...
// stdout per case:           "OK id maxErrorRatio"  or  "FAIL id reason"
// Every GM tensor is a separate heap block of exactly its size (ASan guards both ends); the
// stand-in rejects any GM access outside them and counts every output element write. Blocks
// run one after another, 0 .. blockDim-1. A stand-in or sanitizer failure aborts the process
// after "BEGIN id" was printed, so the caller knows the case.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernel_operator.h"
#include "coverage_tiling.inc"

namespace {

template <typename T>
struct Tol;
template <>
struct Tol<half> {
    static constexpr double rtol = 2e-3, atol = 1e-6;
};
template <>
struct Tol<float> {
    static constexpr double rtol = 2e-5, atol = 1e-5;
};
template <>
struct Tol<int32_t> {  // exact
    static constexpr double rtol = 0, atol = 0.5;
};
template <>
struct Tol<bfloat16_t> {
    static constexpr double rtol = 1.6e-2, atol = 1e-5;
};

struct Rng {  // splitmix64
    uint64_t state;
    uint64_t Next() {
        uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
};

// One GM tensor: exactly n elements on the heap, registered with the stand-in.
template <typename T>
struct Gm {
    std::unique_ptr<T[]> data;
    std::unique_ptr<uint8_t[]> writes;
    uint64_t n;
    Gm(const char* name, uint64_t count, bool output) : data(new T[count]), n(count) {
        if (output) {
            writes.reset(new uint8_t[count]());
            std::memset(static_cast<void*>(data.get()), 0xff, count * sizeof(T));
        }
        ascend_tune_stub::RegisterGm(name, data.get(), count * sizeof(T), sizeof(T), writes.get());
    }
    // Values on a grid of (hi - lo) / 1024 (exact in half for the ranges used here).
    void Fill(Rng& rng, double lo, double hi) {
        const double step = (hi - lo) / 1024.0;
        for (uint64_t i = 0; i < n; ++i) {
            data[i] = ascend_tune_stub::FromD<T>(lo + step * static_cast<double>(rng.Next() >> 54));
        }
    }
    double At(uint64_t i) const { return ascend_tune_stub::ToD(data[i]); }
    GM_ADDR Addr() { return reinterpret_cast<GM_ADDR>(data.get()); }
};

struct Verdict {
    std::string failure;
    double worst = 0;
    template <typename T>
    void Writes(const Gm<T>& out) {
        if (!failure.empty()) return;
        for (uint64_t i = 0; i < out.n; ++i) {
            if (out.writes[i] != 1) {
                failure = "output element " + std::to_string(i) + " of " + std::to_string(out.n) +
                          " written " + std::to_string(out.writes[i]) + " times";
                return;
            }
        }
    }
    template <typename T>
    void Value(uint64_t i, double got, double want) {
        if (!failure.empty()) return;
        const double err = std::fabs(got - want);
        const double ratio = err / (Tol<T>::atol + Tol<T>::rtol * std::fabs(want));
        if (!(ratio <= 1.0)) {
            char buf[160];
            std::snprintf(buf, sizeof buf, "output element %llu is %.9g, expected %.9g",
                          static_cast<unsigned long long>(i), got, want);
            failure = buf;
        } else if (ratio > worst) {
            worst = ratio;
        }
    }
};

// The kernel runs block by block; each run must take exactly one TILING_KEY_IS branch.
template <typename Launch>
std::string RunBlocks(int64_t blockDim, uint64_t key, Launch launch) {
    for (int64_t b = 0; b < blockDim; ++b) {
        ascend_tune_stub::SetBlock(b, blockDim);
        ascend_tune_stub::SetTilingKey(key);
        launch();
        if (ascend_tune_stub::KeyMatches() != 1) {
            return "block " + std::to_string(b) + " took " +
                   std::to_string(ascend_tune_stub::KeyMatches()) + " branches for tiling key " +
                   std::to_string(key);
        }
        if (ascend_tune_stub::TaskType() != KERNEL_TYPE_AIV_ONLY) {
            return "the kernel does not declare KERNEL_TYPE_AIV_ONLY";
        }
    }
    return "";
}

inline double Sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }
inline double Gelu(double v) {
    return v / (1.0 + std::exp(-1.5957691 * (v + 0.044715 * v * v * v)));
}

#if defined(OP_ADD) || defined(OP_MUL) || defined(OP_SWIGLU) || defined(OP_FLOOR_MOD)
#define ELEMENTWISE_INPUTS 2
#elif defined(OP_GELU) || defined(OP_CAST)
#define ELEMENTWISE_INPUTS 1
#endif

#if defined(ELEMENTWISE_INPUTS)
#if defined(OP_SWIGLU)
using In0 = DTYPE_A;
using In1 = DTYPE_B;
using Out = DTYPE_Y;
#elif ELEMENTWISE_INPUTS == 2
using In0 = DTYPE_X;
using In1 = DTYPE_Y;
using Out = DTYPE_Z;
#else
using In0 = DTYPE_X;
using Out = DTYPE_Y;
#endif

double Reference(double a, double b) {
    (void)b;
#if defined(OP_ADD)
    return a + b;
#elif defined(OP_MUL)
    return a * b;
#elif defined(OP_FLOOR_MOD)
    return a - std::floor(a / b) * b;
#elif defined(OP_SWIGLU)
    return a * Sigmoid(a) * b;
#elif defined(OP_GELU)
    return Gelu(a);
#else
    return a;
#endif
}

#if ELEMENTWISE_INPUTS == 2
extern "C" void KERNEL_ENTRY(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR);
#else
extern "C" void KERNEL_ENTRY(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR);
#endif

Verdict RunCase(const std::vector<uint64_t>& shape, int64_t blockDim, uint64_t key, GM_ADDR tiling,
                Rng& rng) {
    const uint64_t n = shape.at(0);
    Verdict v;
    Gm<In0> a("input0", n, false);
#if defined(OP_FLOOR_MOD)
    a.Fill(rng, -512, 512);  // integers; negative x checks the floor
#else
    a.Fill(rng, -4, 4);
#endif
#if ELEMENTWISE_INPUTS == 2
    Gm<In1> b("input1", n, false);
#if defined(OP_FLOOR_MOD)
    b.Fill(rng, 1, 1025);  // integers, no zero divisor
#else
    b.Fill(rng, -4, 4);
#endif
#endif
    Gm<Out> out("output", n, true);
    v.failure = RunBlocks(blockDim, key, [&]() {
#if ELEMENTWISE_INPUTS == 2
        KERNEL_ENTRY(a.Addr(), b.Addr(), out.Addr(), nullptr, tiling);
#else
        KERNEL_ENTRY(a.Addr(), out.Addr(), nullptr, tiling);
#endif
    });
    v.Writes(out);
    for (uint64_t i = 0; i < n && v.failure.empty(); ++i) {
#if ELEMENTWISE_INPUTS == 2
        v.Value<Out>(i, out.At(i), Reference(a.At(i), b.At(i)));
#else
        v.Value<Out>(i, out.At(i), Reference(a.At(i), 0.0));
#endif
    }
    return v;
}

#elif defined(OP_BROADCAST_MUL)  // shape: batch seq hidden streams

using In0 = DTYPE_X;
using Out = DTYPE_OUT;
extern "C" void KERNEL_ENTRY(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR);

Verdict RunCase(const std::vector<uint64_t>& shape, int64_t blockDim, uint64_t key, GM_ADDR tiling,
                Rng& rng) {
    const uint64_t batch = shape.at(0), row = shape.at(1) * shape.at(2), streams = shape.at(3);
    Verdict v;
    Gm<In0> x("x", batch * row, false);
    x.Fill(rng, -4, 4);
    Gm<DTYPE_H> h("h", batch * streams, false);
    h.Fill(rng, -2, 2);
    Gm<Out> out("out", batch * streams * row, true);
    v.failure = RunBlocks(blockDim, key, [&]() {
        KERNEL_ENTRY(x.Addr(), h.Addr(), out.Addr(), nullptr, tiling);
    });
    v.Writes(out);
    for (uint64_t b = 0; b < batch && v.failure.empty(); ++b) {
        for (uint64_t n = 0; n < streams; ++n) {
            const uint64_t base = (b * streams + n) * row;
            for (uint64_t i = 0; i < row; ++i) {
                v.Value<Out>(base + i, out.At(base + i), h.At(b * streams + n) * x.At(b * row + i));
            }
        }
    }
    return v;
}

#else  // rows family: [rows, cols] row-major

using In0 = DTYPE_X;
using Out = DTYPE_Y;
#if defined(OP_SOFTMAX)
extern "C" void KERNEL_ENTRY(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR);
#elif defined(OP_RMSNORM)
using Gamma = DTYPE_GAMMA;
extern "C" void KERNEL_ENTRY(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR);
constexpr double kEps = 1e-6;
#elif defined(OP_LAYERNORM)
using Gamma = DTYPE_GAMMA;
using Beta = DTYPE_BETA;
extern "C" void KERNEL_ENTRY(GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR, GM_ADDR);
constexpr double kEps = 1e-5;
#else
#error "define one OP_<NAME>"
#endif

Verdict RunCase(const std::vector<uint64_t>& shape, int64_t blockDim, uint64_t key, GM_ADDR tiling,
                Rng& rng) {
    const uint64_t rows = shape.at(0), cols = shape.at(1);
    Verdict v;
    Gm<In0> x("x", rows * cols, false);
    x.Fill(rng, -4, 4);
#if defined(OP_RMSNORM) || defined(OP_LAYERNORM)
    Gm<Gamma> gamma("gamma", cols, false);
    gamma.Fill(rng, 0.5, 1.5);
#endif
#if defined(OP_LAYERNORM)
    Gm<Beta> beta("beta", cols, false);
    beta.Fill(rng, -1, 1);
#endif
    Gm<Out> y("y", rows * cols, true);
    v.failure = RunBlocks(blockDim, key, [&]() {
#if defined(OP_SOFTMAX)
        KERNEL_ENTRY(x.Addr(), y.Addr(), nullptr, tiling);
#elif defined(OP_RMSNORM)
        KERNEL_ENTRY(x.Addr(), gamma.Addr(), y.Addr(), nullptr, tiling);
#else
        KERNEL_ENTRY(x.Addr(), gamma.Addr(), beta.Addr(), y.Addr(), nullptr, tiling);
#endif
    });
    v.Writes(y);
    std::vector<double> e;
    (void)e;
    for (uint64_t r = 0; r < rows && v.failure.empty(); ++r) {
        const uint64_t base = r * cols;
#if defined(OP_SOFTMAX)
        double m = x.At(base);
        for (uint64_t c = 1; c < cols; ++c) m = std::max(m, x.At(base + c));
        double s = 0;
        e.resize(cols);
        for (uint64_t c = 0; c < cols; ++c) s += (e[c] = std::exp(x.At(base + c) - m));
        for (uint64_t c = 0; c < cols; ++c) v.Value<Out>(base + c, y.At(base + c), e[c] / s);
#elif defined(OP_RMSNORM)
        double ss = 0;
        for (uint64_t c = 0; c < cols; ++c) ss += x.At(base + c) * x.At(base + c);
        const double rstd = 1.0 / std::sqrt(ss / static_cast<double>(cols) + kEps);
        for (uint64_t c = 0; c < cols; ++c) {
            v.Value<Out>(base + c, y.At(base + c), x.At(base + c) * rstd * gamma.At(c));
        }
#else
        double s = 0;
        for (uint64_t c = 0; c < cols; ++c) s += x.At(base + c);
        const double mean = s / static_cast<double>(cols);
        double var = 0;
        for (uint64_t c = 0; c < cols; ++c)
            var += (x.At(base + c) - mean) * (x.At(base + c) - mean);
        const double rstd = 1.0 / std::sqrt(var / static_cast<double>(cols) + kEps);
        for (uint64_t c = 0; c < cols; ++c) {
            v.Value<Out>(base + c, y.At(base + c),
                         (x.At(base + c) - mean) * rstd * gamma.At(c) + beta.At(c));
        }
#endif
    }
    return v;
}
#endif

}  // namespace

int main() {
    std::printf("SIZEOF %zu\n", sizeof(ASCEND_TUNE_KERNEL_TILING));
    std::fflush(stdout);
    while (true) {
        char id[128];
        long long blockDim = 0, nShape = 0, nFields = 0;
        unsigned long long key = 0, seed = 0;
        if (std::scanf("%127s %lld %llu %lld", id, &blockDim, &key, &nShape) != 4) return 0;
        std::vector<uint64_t> shape(static_cast<size_t>(nShape));
        for (uint64_t& s : shape) {
            unsigned long long value = 0;
            if (std::scanf("%llu", &value) != 1) return 2;
            s = value;
        }
        if (std::scanf("%llu %lld", &seed, &nFields) != 2 || nFields != kFieldCount) {
            std::printf("FAIL %s expected %d tiling fields\n", id, kFieldCount);
            return 2;
        }
        std::vector<double> fields(static_cast<size_t>(nFields));
        for (double& f : fields) {
            if (std::scanf("%lf", &f) != 1) return 2;
        }
        std::printf("BEGIN %s\n", id);
        std::fflush(stdout);
        ASCEND_TUNE_KERNEL_TILING td{};
        FillTiling(td, fields.data());
        // The tiling buffer as the runtime hands it over: exactly the struct's bytes.
        std::unique_ptr<uint8_t[]> tiling(new uint8_t[sizeof td]);
        std::memcpy(tiling.get(), &td, sizeof td);
        Rng rng{seed};
        ascend_tune_stub::ResetGm();
        const Verdict v = RunCase(shape, blockDim, key, tiling.get(), rng);
        ascend_tune_stub::ResetGm();
        if (v.failure.empty()) {
            std::printf("OK %s %.3f\n", id, v.worst);
        } else {
            std::printf("FAIL %s %s\n", id, v.failure.c_str());
        }
        std::fflush(stdout);
    }
}
