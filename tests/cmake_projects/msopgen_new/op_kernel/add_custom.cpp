// Stand-in AddCustom kernel of the 9.x template: the TilingData is the plain struct of
// add_custom_tiling.h, registered for GET_TILING_DATA.
#include "kernel_operator.h"
#include "add_custom_tiling.h"
#include "add_custom_tuned_constants.h"

extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z,
                                                 GM_ADDR workspace, GM_ADDR tiling) {
    (void)x; (void)y; (void)z; (void)workspace;
    KERNEL_TASK_TYPE_DEFAULT(ADD_CUSTOM_KERNEL_TYPE);
    REGISTER_TILING_DEFAULT(AddCustomTilingData);
    GET_TILING_DATA(td, tiling);
    volatile uint64_t elems = static_cast<uint64_t>(td.tileNum) * td.tileLength;
    (void)elems;
}
