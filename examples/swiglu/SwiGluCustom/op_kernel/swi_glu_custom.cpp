// Hand-written SwiGluCustom kernel reading the tuned TilingData (operator_specs/swiglu.yaml):
//   y = SiLU(a) * b = a / (1 + exp(-a)) * b, float32 compute in UB.
// a and b are the two halves of the up-projection, totalLength elements each. Tiling key =
// queue depth. Every core but the last owns blockLength elements (tileNum tiles of tileLength,
// the last lastTileLength, all 32-byte aligned); the last core owns lastBlockLength elements in
// lastBlockTileNum tiles, the last lastBlockLastTileLength long and possibly unaligned, so it
// moves with DataCopyPad.
// UB: bufferNum * tileLength * (sizeof a + sizeof b + sizeof y) + 3 float32 temporaries.
// The TilingData struct comes from the build (macro style) or op_kernel/swi_glu_custom_tiling.h.
#include "kernel_operator.h"
#include "swi_glu_custom_tuned_constants.h"

#ifndef DTYPE_A
#define DTYPE_A half
#endif
#ifndef DTYPE_B
#define DTYPE_B DTYPE_A
#endif
#ifndef DTYPE_Y
#define DTYPE_Y DTYPE_A
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

template <typename TA, typename TB, typename TY, int32_t BUFFER_NUM>
class KernelSwiGlu {
public:
    __aicore__ inline void Init(GM_ADDR a, GM_ADDR b, GM_ADDR y, const CoreShare& share,
                                AscendC::TPipe* pipe) {
        share_ = share;
        aGm_.SetGlobalBuffer((__gm__ TA*)a + share.offset, share.length);
        bGm_.SetGlobalBuffer((__gm__ TB*)b + share.offset, share.length);
        yGm_.SetGlobalBuffer((__gm__ TY*)y + share.offset, share.length);
        pipe->InitBuffer(inA_, BUFFER_NUM, share.tileLength * sizeof(TA));
        pipe->InitBuffer(inB_, BUFFER_NUM, share.tileLength * sizeof(TB));
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
        AscendC::LocalTensor<TA> a = inA_.template AllocTensor<TA>();
        AscendC::LocalTensor<TB> b = inB_.template AllocTensor<TB>();
        CopyIn(a, aGm_[at], len);
        CopyIn(b, bGm_[at], len);
        inA_.EnQue(a);
        inB_.EnQue(b);
    }
    __aicore__ inline void Stage2(uint32_t len) {
        const int32_t n = static_cast<int32_t>(len);
        AscendC::LocalTensor<TA> a = inA_.template DeQue<TA>();
        AscendC::LocalTensor<TB> b = inB_.template DeQue<TB>();
        AscendC::LocalTensor<TY> y = outY_.template AllocTensor<TY>();
        AscendC::LocalTensor<float> va = work0_.Get<float>();
        AscendC::LocalTensor<float> vb = work1_.Get<float>();
        AscendC::LocalTensor<float> t = work2_.Get<float>();
        CastUp(va, a, len);
        CastUp(vb, b, len);
        AscendC::Muls(t, va, -1.0f, n);
        AscendC::Exp(t, t, n);
        AscendC::Adds(t, t, 1.0f, n);
        AscendC::Div(t, va, t, n);  // a * sigmoid(a)
        AscendC::Mul(t, t, vb, n);
        CastDown(y, t, len);
        outY_.EnQue(y);
        inA_.FreeTensor(a);
        inB_.FreeTensor(b);
    }
    __aicore__ inline void Stage3(uint64_t at, uint32_t len) {
        AscendC::LocalTensor<TY> y = outY_.template DeQue<TY>();
        CopyOut(yGm_[at], y, len);
        outY_.FreeTensor(y);
    }

    AscendC::TQue<AscendC::QuePosition::VECIN, BUFFER_NUM> inA_, inB_;
    AscendC::TQue<AscendC::QuePosition::VECOUT, BUFFER_NUM> outY_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> work0_, work1_, work2_;
    AscendC::GlobalTensor<TA> aGm_;
    AscendC::GlobalTensor<TB> bGm_;
    AscendC::GlobalTensor<TY> yGm_;
    CoreShare share_{};
};

}  // namespace

extern "C" __global__ __aicore__ void swi_glu_custom(GM_ADDR a, GM_ADDR b, GM_ADDR y,
                                                     GM_ADDR workspace, GM_ADDR tiling) {
    (void)workspace;
    KERNEL_TASK_TYPE_DEFAULT(SWI_GLU_CUSTOM_KERNEL_TYPE);
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
        KernelSwiGlu<DTYPE_A, DTYPE_B, DTYPE_Y, 1> op;
        op.Init(a, b, y, share, &pipe);
        op.Process();
    } else if (TILING_KEY_IS(2)) {
        KernelSwiGlu<DTYPE_A, DTYPE_B, DTYPE_Y, 2> op;
        op.Init(a, b, y, share, &pipe);
        op.Process();
    }
}
