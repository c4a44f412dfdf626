// Stand-in CATLASS-style example: the host picks the launch from the tuned tiling struct and
// the constants (a real example launches the kernel with <<<blockDim, nullptr, stream>>>).
#include <cstdio>
#include "catlass_matmul_custom_tiling.h"
#include "catlass_matmul_custom_tuned_constants.h"

int main() {
    CatlassMatmulCustomTilingData tiling;
    tiling.m = 4096;
    tiling.n = 4096;
    tiling.k = 4096;
    std::printf("%u %u %u %zu %lld\n", tiling.m, tiling.n, tiling.k, sizeof tiling,
                static_cast<long long>(catlass_matmul_custom_tuned::TUNED_SHAPE_COUNT));
    return 0;
}
