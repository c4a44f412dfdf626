// Hand-written SoftmaxCustom kernel reading the tuned TilingData (operator_specs/softmax.yaml):
// softmax over the last axis of a [rows, cols] row-major tensor, float32 compute in UB.
//
// A full core owns rowsPerCore rows from row blockIdx * rowsPerCore, in rowLoops passes of
// rowFactor rows (the last pass tailRowFactor rows); the last core owns lastBlockRows rows in
// lastBlockRowLoops passes (the last lastBlockTailRowFactor rows).
// Tiling key 1/2 (= queue depth): a pass holds rowFactor whole rows, colsAligned apart in UB.
// Tiling key 11/12: a row does not fit (rowFactor = 1); it is read in colLoops passes of
// colFactor columns (the last tailColFactor, unaligned), twice: online max and sum, then
// normalise and write.
// UB: bufferNum * rowFactor * colFactor * (sizeof x + sizeof y) + 2 float32 tiles + 64 B/row.
// The TilingData struct comes from the build (macro style) or op_kernel/softmax_custom_tiling.h.
#include "kernel_operator.h"
#include "softmax_custom_tuned_constants.h"

#ifndef DTYPE_X
#define DTYPE_X half
#endif
#ifndef DTYPE_Y
#define DTYPE_Y DTYPE_X
#endif

namespace {

constexpr uint32_t REDUCE_SLOT = 16;  // floats of the reduce buffer per row (64 B)
constexpr float LOWEST = -3.402823466e38f;

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

template <typename TX, typename TY, int32_t BUFFER_NUM>
class KernelSoftmax {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, const RowShare& share, AscendC::TPipe* pipe) {
        s_ = share;
        pipe_ = pipe;
        const uint64_t first = share.rowStart * share.cols;
        const uint64_t count = static_cast<uint64_t>(share.rows) * share.cols;
        xGm_.SetGlobalBuffer((__gm__ TX*)x + first, count);
        yGm_.SetGlobalBuffer((__gm__ TY*)y + first, count);
        const uint32_t tile = share.rowFactor * share.colFactor;
        pipe->InitBuffer(inX_, BUFFER_NUM, tile * sizeof(TX));
        pipe->InitBuffer(outY_, BUFFER_NUM, tile * sizeof(TY));
        pipe->InitBuffer(work_, tile * sizeof(float));
        pipe->InitBuffer(scratch_, tile * sizeof(float));
        pipe->InitBuffer(reduce_, share.rowFactor * REDUCE_SLOT * sizeof(float));
    }

    // Whole rows: rowFactor rows per pass.
    __aicore__ inline void ProcessRows() {
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
            CastUp(w, x, nr * s_.colsAligned);
            inX_.FreeTensor(x);
            const int32_t n = static_cast<int32_t>(s_.cols);
            for (uint32_t r = 0; r < nr; ++r) {
                AscendC::LocalTensor<float> row = w[r * s_.colsAligned];
                AscendC::ReduceMax(red[r * REDUCE_SLOT], row, tmp, n);
                const float m = ReadScalar(red[r * REDUCE_SLOT]);
                AscendC::Adds(row, row, -m, n);
                AscendC::Exp(row, row, n);
                AscendC::ReduceSum(red[r * REDUCE_SLOT], row, tmp, n);
                const float sum = ReadScalar(red[r * REDUCE_SLOT]);
                AscendC::Muls(row, row, 1.0f / sum, n);
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
            float maxSoFar = LOWEST;
            float sum = 0.0f;
            for (uint32_t c = 0; c < s_.colLoops; ++c) {  // online max and sum
                const uint32_t n = Chunk(c);
                AscendC::LocalTensor<float> w =
                    LoadChunk(rowAt + static_cast<uint64_t>(c) * s_.colFactor, n);
                AscendC::LocalTensor<float> tmp = scratch_.Get<float>();
                AscendC::LocalTensor<float> red = reduce_.Get<float>();
                AscendC::ReduceMax(red, w, tmp, static_cast<int32_t>(n));
                const float chunkMax = ReadScalar(red);
                const float newMax = chunkMax > maxSoFar ? chunkMax : maxSoFar;
                sum *= ScalarExp(maxSoFar - newMax);
                AscendC::Adds(w, w, -newMax, static_cast<int32_t>(n));
                AscendC::Exp(w, w, static_cast<int32_t>(n));
                AscendC::ReduceSum(red, w, tmp, static_cast<int32_t>(n));
                sum += ReadScalar(red);
                maxSoFar = newMax;
            }
            const float inv = 1.0f / sum;
            for (uint32_t c = 0; c < s_.colLoops; ++c) {  // normalise and write
                const uint32_t n = Chunk(c);
                const uint64_t at = rowAt + static_cast<uint64_t>(c) * s_.colFactor;
                AscendC::LocalTensor<float> w = LoadChunk(at, n);
                AscendC::Adds(w, w, -maxSoFar, static_cast<int32_t>(n));
                AscendC::Exp(w, w, static_cast<int32_t>(n));
                AscendC::Muls(w, w, inv, static_cast<int32_t>(n));
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
    // exp on the vector unit (the scalar unit has none), in the reduce buffer's spare slot.
    __aicore__ inline float ScalarExp(float v) {
        AscendC::LocalTensor<float> slot = reduce_.Get<float>()[8];
        slot.SetValue(0, v);
        const event_t e = static_cast<event_t>(pipe_->FetchEventID(AscendC::HardEvent::S_V));
        AscendC::SetFlag<AscendC::HardEvent::S_V>(e);
        AscendC::WaitFlag<AscendC::HardEvent::S_V>(e);
        AscendC::Exp(slot, slot, 1);
        return ReadScalar(slot);
    }

    AscendC::TPipe* pipe_ = nullptr;
    AscendC::TQue<AscendC::QuePosition::VECIN, BUFFER_NUM> inX_;
    AscendC::TQue<AscendC::QuePosition::VECOUT, BUFFER_NUM> outY_;
    AscendC::TBuf<AscendC::TPosition::VECCALC> work_, scratch_, reduce_;
    AscendC::GlobalTensor<TX> xGm_;
    AscendC::GlobalTensor<TY> yGm_;
    RowShare s_{};
};

}  // namespace

extern "C" __global__ __aicore__ void softmax_custom(GM_ADDR x, GM_ADDR y, GM_ADDR workspace,
                                                     GM_ADDR tiling) {
    (void)workspace;
    KERNEL_TASK_TYPE_DEFAULT(SOFTMAX_CUSTOM_KERNEL_TYPE);
    GET_TILING_DATA(td, tiling);
    const uint32_t idx = static_cast<uint32_t>(AscendC::GetBlockIdx());
    const bool last = idx + 1 == static_cast<uint32_t>(AscendC::GetBlockNum());
    RowShare share;
    share.rowStart = static_cast<uint64_t>(idx) * td.rowsPerCore;
    share.rows = last ? td.lastBlockRows : td.rowsPerCore;
    share.rowFactor = td.rowFactor;
    share.rowLoops = last ? td.lastBlockRowLoops : td.rowLoops;
    share.tailRows = last ? td.lastBlockTailRowFactor : td.tailRowFactor;
    share.cols = td.cols;
    share.colsAligned = td.colsAligned;
    share.colFactor = td.colFactor;
    share.colLoops = td.colLoops;
    share.tailCols = td.tailColFactor;
    AscendC::TPipe pipe;
    if (TILING_KEY_IS(1)) {
        KernelSoftmax<DTYPE_X, DTYPE_Y, 1> op;
        op.Init(x, y, share, &pipe);
        op.ProcessRows();
    } else if (TILING_KEY_IS(2)) {
        KernelSoftmax<DTYPE_X, DTYPE_Y, 2> op;
        op.Init(x, y, share, &pipe);
        op.ProcessRows();
    } else if (TILING_KEY_IS(11)) {
        KernelSoftmax<DTYPE_X, DTYPE_Y, 1> op;
        op.Init(x, y, share, &pipe);
        op.ProcessSplit();
    } else if (TILING_KEY_IS(12)) {
        KernelSoftmax<DTYPE_X, DTYPE_Y, 2> op;
        op.Init(x, y, share, &pipe);
        op.ProcessSplit();
    }
}
