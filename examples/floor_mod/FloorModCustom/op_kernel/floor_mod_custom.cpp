// Hand-written FloorModCustom kernel (the AddCustom sample structure) reading the tuned
// TilingData: z = x - floor(x / y) * y on int32. There is no int32 vector divide, so each tile
// is cast to float32, divided, cast back rounding down, multiplied by y and subtracted from x
// (operator_specs/floor_mod.yaml has one pipeline stage per instruction below). The float32
// quotient is exact while |x| < 2^24 and no quotient lies within float32 rounding of an
// integer it does not equal; a kernel for the full int32 range corrects the quotient by one.
// Tiling key = queue depth (spec: tiling_key: bufferNum). Every core but the last owns
// blockLength elements (tileNum tiles of tileLength, the last one lastTileLength, all 32-byte
// aligned); the last core owns lastBlockLength elements in lastBlockTileNum tiles, the last
// lastBlockLastTileLength long and possibly unaligned, so it moves with DataCopyPad.
// The TilingData struct comes from the build (macro style) or op_kernel/floor_mod_custom_tiling.h.
#include "kernel_operator.h"
#include "floor_mod_custom_tuned_constants.h"

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

template <int32_t BUFFER_NUM>
class KernelFloorMod {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, const CoreShare& share,
                                AscendC::TPipe* pipe) {
        share_ = share;
        xGm_.SetGlobalBuffer((__gm__ int32_t*)x + share.offset, share.length);
        yGm_.SetGlobalBuffer((__gm__ int32_t*)y + share.offset, share.length);
        zGm_.SetGlobalBuffer((__gm__ int32_t*)z + share.offset, share.length);
        pipe->InitBuffer(inX_, BUFFER_NUM, share.tileLength * sizeof(int32_t));
        pipe->InitBuffer(inY_, BUFFER_NUM, share.tileLength * sizeof(int32_t));
        pipe->InitBuffer(outZ_, BUFFER_NUM, share.tileLength * sizeof(int32_t));
        pipe->InitBuffer(workX_, share.tileLength * sizeof(float));
        pipe->InitBuffer(workY_, share.tileLength * sizeof(float));
    }
    __aicore__ inline void Process() {
        for (uint32_t i = 0; i < share_.tileNum; ++i) {
            const uint32_t len =
                (i + 1 == share_.tileNum) ? share_.lastTileLength : share_.tileLength;
            const uint64_t at = static_cast<uint64_t>(i) * share_.tileLength;
            CopyInTile(at, len);
            Compute(len);
            CopyOutTile(at, len);
        }
    }

private:
    __aicore__ inline void CopyInTile(uint64_t at, uint32_t len) {
        AscendC::LocalTensor<int32_t> x = inX_.template AllocTensor<int32_t>();
        AscendC::LocalTensor<int32_t> y = inY_.template AllocTensor<int32_t>();
        CopyIn(x, xGm_[at], len);
        CopyIn(y, yGm_[at], len);
        inX_.EnQue(x);
        inY_.EnQue(y);
    }
    __aicore__ inline void Compute(uint32_t len) {
        const int32_t n = static_cast<int32_t>(len);
        AscendC::LocalTensor<int32_t> x = inX_.template DeQue<int32_t>();
        AscendC::LocalTensor<int32_t> y = inY_.template DeQue<int32_t>();
        AscendC::LocalTensor<int32_t> z = outZ_.template AllocTensor<int32_t>();
        AscendC::LocalTensor<float> xf = workX_.Get<float>();
        AscendC::LocalTensor<float> yf = workY_.Get<float>();
        AscendC::Cast(xf, x, AscendC::RoundMode::CAST_NONE, len);   // cast_to_float (x)
        AscendC::Cast(yf, y, AscendC::RoundMode::CAST_NONE, len);   // cast_to_float (y)
        AscendC::Div(xf, xf, yf, n);                                // divide
        AscendC::Cast(z, xf, AscendC::RoundMode::CAST_FLOOR, len);  // cast_floor
        AscendC::Mul(z, z, y, n);                                   // times_y
        AscendC::Sub(z, x, z, n);                                   // subtract
        outZ_.EnQue(z);
        inX_.FreeTensor(x);
        inY_.FreeTensor(y);
    }
    __aicore__ inline void CopyOutTile(uint64_t at, uint32_t len) {
        AscendC::LocalTensor<int32_t> z = outZ_.template DeQue<int32_t>();
        CopyOut(zGm_[at], z, len);
        outZ_.FreeTensor(z);
    }

    AscendC::TQue<AscendC::QuePosition::VECIN, BUFFER_NUM> inX_, inY_;
    AscendC::TQue<AscendC::QuePosition::VECOUT, BUFFER_NUM> outZ_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> workX_, workY_;
    AscendC::GlobalTensor<int32_t> xGm_, yGm_, zGm_;
    CoreShare share_{};
};

}  // namespace

extern "C" __global__ __aicore__ void floor_mod_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z,
                                                       GM_ADDR workspace, GM_ADDR tiling) {
    (void)workspace;
    KERNEL_TASK_TYPE_DEFAULT(FLOOR_MOD_CUSTOM_KERNEL_TYPE);
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
        KernelFloorMod<1> op;
        op.Init(x, y, z, share, &pipe);
        op.Process();
    } else if (TILING_KEY_IS(2)) {
        KernelFloorMod<2> op;
        op.Init(x, y, z, share, &pipe);
        op.Process();
    }
}
