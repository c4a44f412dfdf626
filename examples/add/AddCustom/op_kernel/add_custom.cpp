// Hand-written AddCustom kernel (the AscendC sample structure) reading the tuned TilingData.
// The tiling key is the queue depth the tuner chose (spec: tiling_key: bufferNum).
#include "kernel_operator.h"
#include "add_custom_tuned_constants.h"

template <int32_t BUFFER_NUM>
class KernelAdd {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t blockLength,
                                uint32_t tileNum, uint32_t tileLength, uint32_t lastTileLength) {
        blockLength_ = blockLength;
        tileNum_ = tileNum;
        tileLength_ = tileLength;
        lastTileLength_ = lastTileLength;
        const uint64_t offset = static_cast<uint64_t>(blockLength) * AscendC::GetBlockIdx();
        xGm_.SetGlobalBuffer((__gm__ half*)x + offset, blockLength);
        yGm_.SetGlobalBuffer((__gm__ half*)y + offset, blockLength);
        zGm_.SetGlobalBuffer((__gm__ half*)z + offset, blockLength);
        pipe_.InitBuffer(inX_, BUFFER_NUM, tileLength * sizeof(half));
        pipe_.InitBuffer(inY_, BUFFER_NUM, tileLength * sizeof(half));
        pipe_.InitBuffer(outZ_, BUFFER_NUM, tileLength * sizeof(half));
    }
    __aicore__ inline void Process() {
        for (uint32_t i = 0; i < tileNum_; ++i) {
            const uint32_t len = (i + 1 == tileNum_) ? lastTileLength_ : tileLength_;
            auto x = inX_.template AllocTensor<half>();
            auto y = inY_.template AllocTensor<half>();
            AscendC::DataCopy(x, xGm_[i * tileLength_], len);
            AscendC::DataCopy(y, yGm_[i * tileLength_], len);
            inX_.EnQue(x);
            inY_.EnQue(y);
            x = inX_.template DeQue<half>();
            y = inY_.template DeQue<half>();
            auto z = outZ_.template AllocTensor<half>();
            AscendC::Add(z, x, y, len);
            outZ_.EnQue(z);
            inX_.FreeTensor(x);
            inY_.FreeTensor(y);
            z = outZ_.template DeQue<half>();
            AscendC::DataCopy(zGm_[i * tileLength_], z, len);
            outZ_.FreeTensor(z);
        }
    }

private:
    AscendC::TPipe pipe_;
    AscendC::TQue<AscendC::QuePosition::VECIN, BUFFER_NUM> inX_, inY_;
    AscendC::TQue<AscendC::QuePosition::VECOUT, BUFFER_NUM> outZ_;
    AscendC::GlobalTensor<half> xGm_, yGm_, zGm_;
    uint32_t blockLength_ = 0, tileNum_ = 0, tileLength_ = 0, lastTileLength_ = 0;
};

extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z,
                                                 GM_ADDR workspace, GM_ADDR tiling) {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    GET_TILING_DATA(td, tiling);
    if (TILING_KEY_IS(1)) {
        KernelAdd<1> op;
        op.Init(x, y, z, td.blockLength, td.tileNum, td.tileLength, td.lastTileLength);
        op.Process();
    } else if (TILING_KEY_IS(2)) {
        KernelAdd<2> op;
        op.Init(x, y, z, td.blockLength, td.tileNum, td.tileLength, td.lastTileLength);
        op.Process();
    }
}
