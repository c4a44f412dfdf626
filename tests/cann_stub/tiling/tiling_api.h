// Stand-in for tiling/tiling_api.h (CANN 8.1 ascendc/include/highlevel_api/tiling/tiling_api.h
// and lib/matmul/matmul_tilingdata.h): the macro-style host class optiling::TCubeTiling with
// all 50 int32 fields in the real order (cann_integration.md §1, ascendc_tiling.md §5.1), and
// its registration under TCubeTilingOpApi, which libtiling_api does once (a header here, so
// every unit re-runs the same registration line; the registry accepts that). Like the real
// header it also brings in the kernel struct ::TCubeTiling. No matmul_tiling:: API.
#ifndef ASCEND_TUNE_STUB_TILING_API_H
#define ASCEND_TUNE_STUB_TILING_API_H
#include <cstdint>
#include "kernel_tiling/kernel_tiling.h"
#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(TCubeTiling)
TILING_DATA_FIELD_DEF(int32_t, usedCoreNum);
TILING_DATA_FIELD_DEF(int32_t, M);
TILING_DATA_FIELD_DEF(int32_t, N);
TILING_DATA_FIELD_DEF(int32_t, Ka);
TILING_DATA_FIELD_DEF(int32_t, Kb);
TILING_DATA_FIELD_DEF(int32_t, singleCoreM);
TILING_DATA_FIELD_DEF(int32_t, singleCoreN);
TILING_DATA_FIELD_DEF(int32_t, singleCoreK);
TILING_DATA_FIELD_DEF(int32_t, baseM);
TILING_DATA_FIELD_DEF(int32_t, baseN);
TILING_DATA_FIELD_DEF(int32_t, baseK);
TILING_DATA_FIELD_DEF(int32_t, depthA1);
TILING_DATA_FIELD_DEF(int32_t, depthB1);
TILING_DATA_FIELD_DEF(int32_t, stepM);
TILING_DATA_FIELD_DEF(int32_t, stepN);
TILING_DATA_FIELD_DEF(int32_t, isBias);
TILING_DATA_FIELD_DEF(int32_t, transLength);
TILING_DATA_FIELD_DEF(int32_t, iterateOrder);
TILING_DATA_FIELD_DEF(int32_t, shareMode);
TILING_DATA_FIELD_DEF(int32_t, shareL1Size);
TILING_DATA_FIELD_DEF(int32_t, shareL0CSize);
TILING_DATA_FIELD_DEF(int32_t, shareUbSize);
TILING_DATA_FIELD_DEF(int32_t, batchM);
TILING_DATA_FIELD_DEF(int32_t, batchN);
TILING_DATA_FIELD_DEF(int32_t, singleBatchM);
TILING_DATA_FIELD_DEF(int32_t, singleBatchN);
TILING_DATA_FIELD_DEF(int32_t, stepKa);
TILING_DATA_FIELD_DEF(int32_t, stepKb);
TILING_DATA_FIELD_DEF(int32_t, depthAL1CacheUB);
TILING_DATA_FIELD_DEF(int32_t, depthBL1CacheUB);
TILING_DATA_FIELD_DEF(int32_t, dbL0A);
TILING_DATA_FIELD_DEF(int32_t, dbL0B);
TILING_DATA_FIELD_DEF(int32_t, dbL0C);
TILING_DATA_FIELD_DEF(int32_t, ALayoutInfoB);
TILING_DATA_FIELD_DEF(int32_t, ALayoutInfoS);
TILING_DATA_FIELD_DEF(int32_t, ALayoutInfoN);
TILING_DATA_FIELD_DEF(int32_t, ALayoutInfoG);
TILING_DATA_FIELD_DEF(int32_t, ALayoutInfoD);
TILING_DATA_FIELD_DEF(int32_t, BLayoutInfoB);
TILING_DATA_FIELD_DEF(int32_t, BLayoutInfoS);
TILING_DATA_FIELD_DEF(int32_t, BLayoutInfoN);
TILING_DATA_FIELD_DEF(int32_t, BLayoutInfoG);
TILING_DATA_FIELD_DEF(int32_t, BLayoutInfoD);
TILING_DATA_FIELD_DEF(int32_t, CLayoutInfoB);
TILING_DATA_FIELD_DEF(int32_t, CLayoutInfoS1);
TILING_DATA_FIELD_DEF(int32_t, CLayoutInfoN);
TILING_DATA_FIELD_DEF(int32_t, CLayoutInfoG);
TILING_DATA_FIELD_DEF(int32_t, CLayoutInfoS2);
TILING_DATA_FIELD_DEF(int32_t, BatchNum);
TILING_DATA_FIELD_DEF(int32_t, reserved);
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(TCubeTilingOpApi, TCubeTiling)
}  // namespace optiling
#endif
