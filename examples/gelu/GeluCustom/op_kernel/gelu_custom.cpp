// Hand-written GeluCustom kernel reading the tuned TilingData (spec operator_specs/gelu.yaml):
//   y = x / (1 + exp(-1.5957691 * (x + 0.044715 * x^3)))   (tanh GELU, ops-nn FastGelu form)
// computed in float32 in UB. Tiling key = queue depth. Every core but the last owns blockLength
// elements (tileNum tiles of tileLength, the last lastTileLength, all 32-byte aligned); the last
// core owns lastBlockLength elements in lastBlockTileNum tiles, the last one
// lastBlockLastTileLength long and possibly unaligned, so it moves with DataCopyPad.
// UB: bufferNum * tileLength * (sizeof x + sizeof y) + 3 float32 temporaries of tileLength.
// The TilingData struct comes from the build (macro style) or op_kernel/gelu_custom_tiling.h.
#include "kernel_operator.h"
#include "gelu_custom_tuned_constants.h"

#ifndef DTYPE_X
#define DTYPE_X half
#endif
#ifndef DTYPE_Y
#define DTYPE_Y DTYPE_X
#endif

namespace {

constexpr float GELU_CUBE = 0.044715f;
constexpr float GELU_SCALE = -1.5957691f;  // -2 * sqrt(2 / pi)

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

template <typename T>
__aicore__ inline void CastUp(const AscendC::LocalTensor<float>& dst,
                              const AscendC::LocalTensor<T>& src, uint32_t n) {
    AscendC::Cast(dst, src, AscendC::RoundMode::CAST_NONE, n);
}
__aicore__ inline void CastUp(const AscendC::LocalTensor<float>& dst,
                              const AscendC::LocalTensor<float>& src, uint32_t n) {
    AscendC::Adds(dst, src, 0.0f, static_cast<int32_t>(n));
}
template <typename T>
__aicore__ inline void CastDown(const AscendC::LocalTensor<T>& dst,
                                const AscendC::LocalTensor<float>& src, uint32_t n) {
    AscendC::Cast(dst, src, AscendC::RoundMode::CAST_RINT, n);
}
__aicore__ inline void CastDown(const AscendC::LocalTensor<float>& dst,
                                const AscendC::LocalTensor<float>& src, uint32_t n) {
    AscendC::Adds(dst, src, 0.0f, static_cast<int32_t>(n));
}

template <typename TX, typename TY, int32_t BUFFER_NUM>
class KernelGelu {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, const CoreShare& share,
                                AscendC::TPipe* pipe) {
        share_ = share;
        xGm_.SetGlobalBuffer((__gm__ TX*)x + share.offset, share.length);
        yGm_.SetGlobalBuffer((__gm__ TY*)y + share.offset, share.length);
        pipe->InitBuffer(inX_, BUFFER_NUM, share.tileLength * sizeof(TX));
        pipe->InitBuffer(outY_, BUFFER_NUM, share.tileLength * sizeof(TY));
        pipe->InitBuffer(work0_, share.tileLength * sizeof(float));
        pipe->InitBuffer(work1_, share.tileLength * sizeof(float));
        pipe->InitBuffer(work2_, share.tileLength * sizeof(float));
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
        const int32_t n = static_cast<int32_t>(len);
        AscendC::LocalTensor<TX> x = inX_.template DeQue<TX>();
        AscendC::LocalTensor<TY> y = outY_.template AllocTensor<TY>();
        AscendC::LocalTensor<float> v = work0_.Get<float>();
        AscendC::LocalTensor<float> t = work1_.Get<float>();
        AscendC::LocalTensor<float> r = work2_.Get<float>();
        CastUp(v, x, len);
        AscendC::Mul(t, v, v, n);           // x^2
        AscendC::Mul(t, t, v, n);           // x^3
        AscendC::Muls(t, t, GELU_CUBE, n);  // 0.044715 x^3
        AscendC::Add(t, t, v, n);           // x + 0.044715 x^3
        AscendC::Muls(t, t, GELU_SCALE, n);
        AscendC::Exp(t, t, n);
        AscendC::Adds(t, t, 1.0f, n);
        AscendC::Div(r, v, t, n);
        CastDown(y, r, len);
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
    AscendC::TBuf<AscendC::TPosition::VECCALC> work0_, work1_, work2_;
    AscendC::GlobalTensor<TX> xGm_;
    AscendC::GlobalTensor<TY> yGm_;
    CoreShare share_{};
};

}  // namespace

extern "C" __global__ __aicore__ void gelu_custom(GM_ADDR x, GM_ADDR y, GM_ADDR workspace,
                                                  GM_ADDR tiling) {
    (void)workspace;
    KERNEL_TASK_TYPE_DEFAULT(GELU_CUSTOM_KERNEL_TYPE);
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
        KernelGelu<DTYPE_X, DTYPE_Y, 1> op;
        op.Init(x, y, share, &pipe);
        op.Process();
    } else if (TILING_KEY_IS(2)) {
        KernelGelu<DTYPE_X, DTYPE_Y, 2> op;
        op.Init(x, y, share, &pipe);
        op.Process();
    }
}
