// Hand-written RmsNormCustom kernel reading the tuned TilingData (operator_specs/rmsnorm.yaml):
//   y = x * rsqrt(mean(x^2) + eps) * gamma over the last axis of a [numRow, numCol] row-major
// tensor, float32 compute in UB, eps = 1e-6 (the tiling carries no epsilon).
//
// A full core owns blockFactor rows from row blockIdx * blockFactor, in rowLoops passes of
// rowFactor rows (the last pass tailRowFactor rows); the last core owns lastBlockRows rows in
// lastBlockRowLoops passes (the last lastBlockTailRowFactor rows).
// Tiling key 1/2 (= queue depth): a pass holds rowFactor whole rows, numColAlign apart in UB;
// gamma is loaded once per core.
// Tiling key 11/12: a row does not fit (rowFactor = 1); it is read in colLoops passes of ubFactor
// columns (the last tailColFactor, unaligned), twice: sum of squares, then normalise with the
// matching gamma chunk and write.
// UB: bufferNum * rowFactor * ubFactor * (sizeof x + sizeof y) + 2 float32 tiles
//     + ubFactor * (sizeof gamma + 4) + 64 B per row.
// The TilingData struct comes from the build (macro style) or op_kernel/rms_norm_custom_tiling.h.
#include "kernel_operator.h"
#include "rms_norm_custom_tuned_constants.h"

#ifndef DTYPE_X
#define DTYPE_X half
#endif
#ifndef DTYPE_GAMMA
#define DTYPE_GAMMA DTYPE_X
#endif
#ifndef DTYPE_Y
#define DTYPE_Y DTYPE_X
#endif

namespace {

constexpr float EPS = 1e-6f;
constexpr uint32_t REDUCE_SLOT = 16;  // floats of the reduce buffer per row (64 B)

struct RowShare {
    uint64_t rowStart;   // first row of this core
    uint32_t rows;       // rows of this core
    uint32_t rowFactor;  // rows per pass
    uint32_t rowLoops;   // passes
    uint32_t tailRows;   // rows in the last pass
    uint32_t cols;
    uint32_t colsAligned;  // UB row stride (elements) when whole rows are in UB
    uint32_t colFactor;    // columns per pass (= colsAligned unless split)
    uint32_t colLoops;
    uint32_t tailCols;  // real columns in the last column pass
    float avg;          // 1 / cols
};

// nr rows of n elements: GM rows are `gmStride` elements apart, UB rows start 32-byte aligned.
template <typename T>
__aicore__ inline void CopyRowsIn(const AscendC::LocalTensor<T>& dst,
                                  const AscendC::GlobalTensor<T>& src, uint32_t nr, uint32_t n,
                                  uint32_t gmStride) {
    if ((n * sizeof(T)) % 32 == 0 && (nr == 1 || n == gmStride)) {
        AscendC::DataCopy(dst, src, nr * n);
    } else {
        AscendC::DataCopyExtParams copy{static_cast<uint16_t>(nr),
                                        static_cast<uint32_t>(n * sizeof(T)),
                                        static_cast<uint32_t>((gmStride - n) * sizeof(T)), 0, 0};
        AscendC::DataCopyPadExtParams<T> pad{false, 0, 0, T()};
        AscendC::DataCopyPad(dst, src, copy, pad);
    }
}

template <typename T>
__aicore__ inline void CopyRowsOut(const AscendC::GlobalTensor<T>& dst,
                                   const AscendC::LocalTensor<T>& src, uint32_t nr, uint32_t n,
                                   uint32_t gmStride) {
    if ((n * sizeof(T)) % 32 == 0 && (nr == 1 || n == gmStride)) {
        AscendC::DataCopy(dst, src, nr * n);
    } else {
        AscendC::DataCopyExtParams copy{static_cast<uint16_t>(nr),
                                        static_cast<uint32_t>(n * sizeof(T)), 0,
                                        static_cast<uint32_t>((gmStride - n) * sizeof(T)), 0};
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

template <typename TX, typename TG, typename TY, int32_t BUFFER_NUM>
class KernelRmsNorm {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR gamma, GM_ADDR y, const RowShare& share,
                                AscendC::TPipe* pipe) {
        s_ = share;
        pipe_ = pipe;
        const uint64_t first = share.rowStart * share.cols;
        const uint64_t count = static_cast<uint64_t>(share.rows) * share.cols;
        xGm_.SetGlobalBuffer((__gm__ TX*)x + first, count);
        yGm_.SetGlobalBuffer((__gm__ TY*)y + first, count);
        gammaGm_.SetGlobalBuffer((__gm__ TG*)gamma, share.cols);
        const uint32_t tile = share.rowFactor * share.colFactor;
        pipe->InitBuffer(inX_, BUFFER_NUM, tile * sizeof(TX));
        pipe->InitBuffer(outY_, BUFFER_NUM, tile * sizeof(TY));
        pipe->InitBuffer(work_, tile * sizeof(float));
        pipe->InitBuffer(scratch_, tile * sizeof(float));
        pipe->InitBuffer(gammaIn_, share.colFactor * sizeof(TG));
        pipe->InitBuffer(gammaF_, share.colFactor * sizeof(float));
        pipe->InitBuffer(reduce_, share.rowFactor * REDUCE_SLOT * sizeof(float));
    }

    // Whole rows: rowFactor rows per pass; the parameters stay in UB for the whole core.
    __aicore__ inline void ProcessRows() {
        LoadParams(0, s_.cols);
        for (uint32_t p = 0; p < s_.rowLoops; ++p) {
            const uint32_t nr = (p + 1 == s_.rowLoops) ? s_.tailRows : s_.rowFactor;
            const uint64_t at = static_cast<uint64_t>(p) * s_.rowFactor * s_.cols;
            AscendC::LocalTensor<TX> x = inX_.template AllocTensor<TX>();
            CopyRowsIn(x, xGm_[at], nr, s_.cols, s_.cols);
            inX_.EnQue(x);
            x = inX_.template DeQue<TX>();
            AscendC::LocalTensor<float> w = work_.Get<float>();
            AscendC::LocalTensor<float> tmp = scratch_.Get<float>();
            AscendC::LocalTensor<float> red = reduce_.Get<float>();
            AscendC::LocalTensor<float> gammaF = gammaF_.Get<float>();
            CastUp(w, x, nr * s_.colsAligned);
            inX_.FreeTensor(x);
            const int32_t n = static_cast<int32_t>(s_.cols);
            for (uint32_t r = 0; r < nr; ++r) {
                AscendC::LocalTensor<float> row = w[r * s_.colsAligned];
                AscendC::LocalTensor<float> tmpRow = tmp[r * s_.colsAligned];
                AscendC::Mul(tmpRow, row, row, n);
                AscendC::ReduceSum(red[r * REDUCE_SLOT], tmpRow, tmpRow, n);
                const float rstd = ScalarRsqrt(ReadScalar(red[r * REDUCE_SLOT]) * s_.avg + EPS);
                AscendC::Muls(row, row, rstd, n);
                AscendC::Mul(row, row, gammaF, n);
            }
            AscendC::LocalTensor<TY> y = outY_.template AllocTensor<TY>();
            CastDown(y, w, nr * s_.colsAligned);
            outY_.EnQue(y);
            y = outY_.template DeQue<TY>();
            CopyRowsOut(yGm_[at], y, nr, s_.cols, s_.cols);
            outY_.FreeTensor(y);
        }
    }

    // Split rows: colLoops passes of colFactor columns per row, two sweeps.
    __aicore__ inline void ProcessSplit() {
        for (uint32_t r = 0; r < s_.rows; ++r) {
            const uint64_t rowAt = static_cast<uint64_t>(r) * s_.cols;
            // Sweep 1: sum of squares, chunk by chunk.
            float squares = 0.0f;
            for (uint32_t c = 0; c < s_.colLoops; ++c) {
                const uint32_t n = Chunk(c);
                const int32_t cnt = static_cast<int32_t>(n);
                AscendC::LocalTensor<float> w =
                    LoadChunk(rowAt + static_cast<uint64_t>(c) * s_.colFactor, n);
                AscendC::LocalTensor<float> tmp = scratch_.Get<float>();
                AscendC::LocalTensor<float> red = reduce_.Get<float>();
                AscendC::Mul(tmp, w, w, cnt);
                AscendC::ReduceSum(red, tmp, tmp, cnt);
                squares += ReadScalar(red);
            }
            const float rstd = ScalarRsqrt(squares * s_.avg + EPS);
            // Sweep 2: normalise with the matching parameter chunk and write.
            for (uint32_t c = 0; c < s_.colLoops; ++c) {
                const uint32_t n = Chunk(c);
                const int32_t cnt = static_cast<int32_t>(n);
                const uint64_t at = rowAt + static_cast<uint64_t>(c) * s_.colFactor;
                LoadParams(static_cast<uint64_t>(c) * s_.colFactor, n);
                AscendC::LocalTensor<float> w = LoadChunk(at, n);
                AscendC::Muls(w, w, rstd, cnt);
                AscendC::Mul(w, w, gammaF_.Get<float>(), cnt);
                AscendC::LocalTensor<TY> y = outY_.template AllocTensor<TY>();
                CastDown(y, w, n);
                outY_.EnQue(y);
                y = outY_.template DeQue<TY>();
                CopyRowsOut(yGm_[at], y, 1, n, n);
                outY_.FreeTensor(y);
            }
        }
    }

private:
    __aicore__ inline uint32_t Chunk(uint32_t c) const {
        return (c + 1 == s_.colLoops) ? s_.tailCols : s_.colFactor;
    }
    // Parameter columns [at, at + n) into UB, widened to float32.
    __aicore__ inline void LoadParams(uint64_t at, uint32_t n) {
        CopyRowsIn(gammaIn_.Get<TG>(), gammaGm_[at], 1, n, n);
        const event_t e = static_cast<event_t>(pipe_->FetchEventID(AscendC::HardEvent::MTE2_V));
        AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(e);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(e);
        CastUp(gammaF_.Get<float>(), gammaIn_.Get<TG>(), n);
    }
    // n columns from element `at` of this core's view, as float32 in the work tile.
    __aicore__ inline AscendC::LocalTensor<float> LoadChunk(uint64_t at, uint32_t n) {
        AscendC::LocalTensor<TX> x = inX_.template AllocTensor<TX>();
        CopyRowsIn(x, xGm_[at], 1, n, n);
        inX_.EnQue(x);
        x = inX_.template DeQue<TX>();
        AscendC::LocalTensor<float> w = work_.Get<float>();
        CastUp(w, x, n);
        inX_.FreeTensor(x);
        return w;
    }
    __aicore__ inline float ReadScalar(const AscendC::LocalTensor<float>& t) {
        const event_t e = static_cast<event_t>(pipe_->FetchEventID(AscendC::HardEvent::V_S));
        AscendC::SetFlag<AscendC::HardEvent::V_S>(e);
        AscendC::WaitFlag<AscendC::HardEvent::V_S>(e);
        return t.GetValue(0);
    }
    // 1 / sqrt(v): the square root on the vector unit, in the reduce buffer's spare slot.
    __aicore__ inline float ScalarRsqrt(float v) {
        AscendC::LocalTensor<float> slot = reduce_.Get<float>()[8];
        slot.SetValue(0, v);
        const event_t e = static_cast<event_t>(pipe_->FetchEventID(AscendC::HardEvent::S_V));
        AscendC::SetFlag<AscendC::HardEvent::S_V>(e);
        AscendC::WaitFlag<AscendC::HardEvent::S_V>(e);
        AscendC::Sqrt(slot, slot, 1);
        return 1.0f / ReadScalar(slot);
    }

    AscendC::TPipe* pipe_ = nullptr;
    AscendC::TQue<AscendC::QuePosition::VECIN, BUFFER_NUM> inX_;
    AscendC::TQue<AscendC::QuePosition::VECOUT, BUFFER_NUM> outY_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> work_, scratch_, reduce_, gammaIn_, gammaF_;
    AscendC::GlobalTensor<TX> xGm_;
    AscendC::GlobalTensor<TG> gammaGm_;
    AscendC::GlobalTensor<TY> yGm_;
    RowShare s_{};
};

}  // namespace

extern "C" __global__ __aicore__ void rms_norm_custom(GM_ADDR x, GM_ADDR gamma, GM_ADDR y,
                                                      GM_ADDR workspace, GM_ADDR tiling) {
    (void)workspace;
    KERNEL_TASK_TYPE_DEFAULT(RMS_NORM_CUSTOM_KERNEL_TYPE);
    GET_TILING_DATA(td, tiling);
    const uint32_t idx = static_cast<uint32_t>(AscendC::GetBlockIdx());
    const bool last = idx + 1 == static_cast<uint32_t>(AscendC::GetBlockNum());
    RowShare share;
    share.rowStart = static_cast<uint64_t>(idx) * td.blockFactor;
    share.rows = last ? td.lastBlockRows : td.blockFactor;
    share.rowFactor = td.rowFactor;
    share.rowLoops = last ? td.lastBlockRowLoops : td.rowLoops;
    share.tailRows = last ? td.lastBlockTailRowFactor : td.tailRowFactor;
    share.cols = td.numCol;
    share.colsAligned = td.numColAlign;
    share.colFactor = td.ubFactor;
    share.colLoops = td.colLoops;
    share.tailCols = td.tailColFactor;
    share.avg = td.avgFactor;
    AscendC::TPipe pipe;
    if (TILING_KEY_IS(1)) {
        KernelRmsNorm<DTYPE_X, DTYPE_GAMMA, DTYPE_Y, 1> op;
        op.Init(x, gamma, y, share, &pipe);
        op.ProcessRows();
    } else if (TILING_KEY_IS(2)) {
        KernelRmsNorm<DTYPE_X, DTYPE_GAMMA, DTYPE_Y, 2> op;
        op.Init(x, gamma, y, share, &pipe);
        op.ProcessRows();
    } else if (TILING_KEY_IS(11)) {
        KernelRmsNorm<DTYPE_X, DTYPE_GAMMA, DTYPE_Y, 1> op;
        op.Init(x, gamma, y, share, &pipe);
        op.ProcessSplit();
    } else if (TILING_KEY_IS(12)) {
        KernelRmsNorm<DTYPE_X, DTYPE_GAMMA, DTYPE_Y, 2> op;
        op.Init(x, gamma, y, share, &pipe);
        op.ProcessSplit();
    }
}
