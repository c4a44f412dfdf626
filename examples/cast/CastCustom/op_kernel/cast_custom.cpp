// Hand-written CastCustom kernel reading the tuned TilingData (operator_specs/cast.yaml):
// y = Cast(x), float32 -> float16 (RINT) by default, any pair through DTYPE_X / DTYPE_Y.
// Tiling key = queue depth. Every core but the last owns blockLength elements (tileNum tiles of
// tileLength, the last lastTileLength; 16-element multiples, so 32-byte aligned for both 2- and
// 4-byte types); the last core owns lastBlockLength elements in lastBlockTileNum tiles, the last
// lastBlockLastTileLength long and possibly unaligned, so it moves with DataCopyPad.
// UB: bufferNum * tileLength * (sizeof x + sizeof y), no temporaries.
// The TilingData struct comes from the build (macro style) or op_kernel/cast_custom_tiling.h.
#include "kernel_operator.h"
#include "cast_custom_tuned_constants.h"

#ifndef DTYPE_X
#define DTYPE_X float
#endif
#ifndef DTYPE_Y
#define DTYPE_Y half
#endif

namespace {

struct CoreShare {
    uint64_t offset;
    uint32_t length;
    uint32_t tileNum;
    uint32_t tileLength;
    uint32_t lastTileLength;
};

template <typename T>
__aicore__ inline void CopyIn(const AscendC::LocalTensor<T>& dst,
                              const AscendC::GlobalTensor<T>& src, uint32_t len) {
    if ((len * sizeof(T)) % 32 == 0) {
        AscendC::DataCopy(dst, src, len);
    } else {
        AscendC::DataCopyExtParams copy{1, static_cast<uint32_t>(len * sizeof(T)), 0, 0, 0};
        AscendC::DataCopyPadExtParams<T> pad{false, 0, 0, T()};
        AscendC::DataCopyPad(dst, src, copy, pad);
    }
}

template <typename T>
__aicore__ inline void CopyOut(const AscendC::GlobalTensor<T>& dst,
                               const AscendC::LocalTensor<T>& src, uint32_t len) {
    if ((len * sizeof(T)) % 32 == 0) {
        AscendC::DataCopy(dst, src, len);
    } else {
        AscendC::DataCopyExtParams copy{1, static_cast<uint32_t>(len * sizeof(T)), 0, 0, 0};
        AscendC::DataCopyPad(dst, src, copy);
    }
}

template <typename TX, typename TY, int32_t BUFFER_NUM>
class KernelCast {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, const CoreShare& share,
                                AscendC::TPipe* pipe) {
        share_ = share;
        xGm_.SetGlobalBuffer((__gm__ TX*)x + share.offset, share.length);
        yGm_.SetGlobalBuffer((__gm__ TY*)y + share.offset, share.length);
        pipe->InitBuffer(inX_, BUFFER_NUM, share.tileLength * sizeof(TX));
        pipe->InitBuffer(outY_, BUFFER_NUM, share.tileLength * sizeof(TY));
    }
    __aicore__ inline void Process() {
        for (uint32_t i = 0; i < share_.tileNum; ++i) {
            const uint32_t len =
                (i + 1 == share_.tileNum) ? share_.lastTileLength : share_.tileLength;
            const uint64_t at = static_cast<uint64_t>(i) * share_.tileLength;
            Stage1(at, len);
            Stage2(len);
            Stage3(at, len);
        }
    }

private:
    __aicore__ inline void Stage1(uint64_t at, uint32_t len) {
        AscendC::LocalTensor<TX> x = inX_.template AllocTensor<TX>();
        CopyIn(x, xGm_[at], len);
        inX_.EnQue(x);
    }
    __aicore__ inline void Stage2(uint32_t len) {
        AscendC::LocalTensor<TX> x = inX_.template DeQue<TX>();
        AscendC::LocalTensor<TY> y = outY_.template AllocTensor<TY>();
        AscendC::Cast(y, x, AscendC::RoundMode::CAST_RINT, len);
        outY_.EnQue(y);
        inX_.FreeTensor(x);
    }
    __aicore__ inline void Stage3(uint64_t at, uint32_t len) {
        AscendC::LocalTensor<TY> y = outY_.template DeQue<TY>();
        CopyOut(yGm_[at], y, len);
        outY_.FreeTensor(y);
    }

    AscendC::TQue<AscendC::QuePosition::VECIN, BUFFER_NUM> inX_;
    AscendC::TQue<AscendC::QuePosition::VECOUT, BUFFER_NUM> outY_;
    AscendC::GlobalTensor<TX> xGm_;
    AscendC::GlobalTensor<TY> yGm_;
    CoreShare share_{};
};

}  // namespace

extern "C" __global__ __aicore__ void cast_custom(GM_ADDR x, GM_ADDR y, GM_ADDR workspace,
                                                  GM_ADDR tiling) {
    (void)workspace;
    KERNEL_TASK_TYPE_DEFAULT(CAST_CUSTOM_KERNEL_TYPE);
    GET_TILING_DATA(td, tiling);
    const uint32_t idx = static_cast<uint32_t>(AscendC::GetBlockIdx());
    const bool last = idx + 1 == static_cast<uint32_t>(AscendC::GetBlockNum());
    CoreShare share;
    share.offset = static_cast<uint64_t>(idx) * td.blockLength;
    share.length = last ? td.lastBlockLength : td.blockLength;
    share.tileNum = last ? td.lastBlockTileNum : td.tileNum;
    share.tileLength = td.tileLength;
    share.lastTileLength = last ? td.lastBlockLastTileLength : td.lastTileLength;
    AscendC::TPipe pipe;
    if (TILING_KEY_IS(1)) {
        KernelCast<DTYPE_X, DTYPE_Y, 1> op;
        op.Init(x, y, share, &pipe);
        op.Process();
    } else if (TILING_KEY_IS(2)) {
        KernelCast<DTYPE_X, DTYPE_Y, 2> op;
        op.Init(x, y, share, &pipe);
        op.Process();
    }
}
