// Hand-written AddCustom kernel (the AscendC sample structure) reading the tuned TilingData.
// Tiling key = queue depth (spec: tiling_key: bufferNum). Every core but the last owns
// blockLength elements (tileNum tiles of tileLength, the last one lastTileLength, all 32-byte
// aligned); the last core owns lastBlockLength elements in lastBlockTileNum tiles, the last
// lastBlockLastTileLength long and possibly unaligned, so it moves with DataCopyPad.
// The TilingData struct comes from the build (macro style) or op_kernel/add_custom_tiling.h.
#include "kernel_operator.h"
#include "add_custom_tuned_constants.h"

#ifndef DTYPE_X
#define DTYPE_X half
#endif

namespace {

struct CoreShare {
    uint64_t offset;  // first element of this core
    uint32_t length;  // elements of this core
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

template <typename T, int32_t BUFFER_NUM>
class KernelAdd {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, const CoreShare& share,
                                AscendC::TPipe* pipe) {
        share_ = share;
        xGm_.SetGlobalBuffer((__gm__ T*)x + share.offset, share.length);
        yGm_.SetGlobalBuffer((__gm__ T*)y + share.offset, share.length);
        zGm_.SetGlobalBuffer((__gm__ T*)z + share.offset, share.length);
        pipe->InitBuffer(inX_, BUFFER_NUM, share.tileLength * sizeof(T));
        pipe->InitBuffer(inY_, BUFFER_NUM, share.tileLength * sizeof(T));
        pipe->InitBuffer(outZ_, BUFFER_NUM, share.tileLength * sizeof(T));
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
        AscendC::LocalTensor<T> x = inX_.template AllocTensor<T>();
        AscendC::LocalTensor<T> y = inY_.template AllocTensor<T>();
        CopyIn(x, xGm_[at], len);
        CopyIn(y, yGm_[at], len);
        inX_.EnQue(x);
        inY_.EnQue(y);
    }
    __aicore__ inline void Stage2(uint32_t len) {
        AscendC::LocalTensor<T> x = inX_.template DeQue<T>();
        AscendC::LocalTensor<T> y = inY_.template DeQue<T>();
        AscendC::LocalTensor<T> z = outZ_.template AllocTensor<T>();
        AscendC::Add(z, x, y, static_cast<int32_t>(len));
        outZ_.EnQue(z);
        inX_.FreeTensor(x);
        inY_.FreeTensor(y);
    }
    __aicore__ inline void Stage3(uint64_t at, uint32_t len) {
        AscendC::LocalTensor<T> z = outZ_.template DeQue<T>();
        CopyOut(zGm_[at], z, len);
        outZ_.FreeTensor(z);
    }

    AscendC::TQue<AscendC::QuePosition::VECIN, BUFFER_NUM> inX_, inY_;
    AscendC::TQue<AscendC::QuePosition::VECOUT, BUFFER_NUM> outZ_;
    AscendC::GlobalTensor<T> xGm_, yGm_, zGm_;
    CoreShare share_{};
};

}  // namespace

extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR workspace,
                                                 GM_ADDR tiling) {
    (void)workspace;
    KERNEL_TASK_TYPE_DEFAULT(ADD_CUSTOM_KERNEL_TYPE);
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
        KernelAdd<DTYPE_X, 1> op;
        op.Init(x, y, z, share, &pipe);
        op.Process();
    } else if (TILING_KEY_IS(2)) {
        KernelAdd<DTYPE_X, 2> op;
        op.Init(x, y, z, share, &pipe);
        op.Process();
    }
}
