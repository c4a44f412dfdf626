// Stand-in MulCustom kernel: reads the tuned TilingData as the build generated it.
#include "kernel_operator.h"
#include "mul_custom_tuned_constants.h"

extern "C" __global__ __aicore__ void mul_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z,
                                                 GM_ADDR workspace, GM_ADDR tiling) {
    (void)x; (void)y; (void)z; (void)workspace;
    KERNEL_TASK_TYPE_DEFAULT(MUL_CUSTOM_KERNEL_TYPE);
    GET_TILING_DATA(td, tiling);
    volatile uint64_t elems = static_cast<uint64_t>(td.tileNum) * td.tileLength;
    (void)elems;
}
