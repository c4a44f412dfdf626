// Stand-in for kernel_tiling/kernel_tiling.h: the plain TCubeTiling struct (global in 8.1).
#ifndef ASCEND_TUNE_STUB_KERNEL_TILING_H
#define ASCEND_TUNE_STUB_KERNEL_TILING_H
#include <cstdint>
struct TCubeTiling {
    int32_t usedCoreNum = 0, M = 0, N = 0, Ka = 0, Kb = 0, singleCoreM = 0, singleCoreN = 0,
            singleCoreK = 0, baseM = 0, baseN = 0, baseK = 0, depthA1 = 0, depthB1 = 0,
            stepM = 0, stepN = 0, isBias = 0, transLength = 0, iterateOrder = 0, stepKa = 0,
            stepKb = 0, dbL0A = 0, dbL0B = 0, dbL0C = 0;
};
#endif
