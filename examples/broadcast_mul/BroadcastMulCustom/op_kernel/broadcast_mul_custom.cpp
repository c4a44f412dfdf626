// Hand-written BroadcastMulCustom kernel (the mhc_post read-once strategy) reading the tuned
// TilingData: out[b, n, :] = h[b, n] * x[b, :] for every batch item b and stream n, a row of x
// being seq * hidden elements. Each row splits into tilesPerRow tiles of tileLength elements
// (the last lastRowTileLength long); the tiles of all rows are dealt out in order, tilesPerCore
// to every core but the last, which takes lastBlockTiles. A core loads each of its x tiles and
// the weights of the tile's row once and writes the tile `streams` times, each a Muls by one
// weight (operator_specs/broadcast_mul.yaml: copy_in_x, copy_in_h, muls and copy_out, the last
// two `count: streams`). Tiling key = queue depth (spec: tiling_key: bufferNum).
// The TilingData struct comes from the build (macro style) or
// op_kernel/broadcast_mul_custom_tiling.h.
#include "kernel_operator.h"
#include "broadcast_mul_custom_tuned_constants.h"

#ifndef DTYPE_X
#define DTYPE_X float
#endif

namespace {

struct CoreShare {
    uint64_t firstTile;  // global index of this core's first tile
    uint32_t tiles;      // tiles of this core
    uint32_t streams;
    uint32_t rowLength;
    uint32_t tileLength;
    uint32_t tilesPerRow;
    uint32_t lastRowTileLength;
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
class KernelBroadcastMul {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR h, GM_ADDR out, uint32_t batch,
                                const CoreShare& share, AscendC::TPipe* pipe) {
        share_ = share;
        pipe_ = pipe;
        const uint64_t rows = batch;
        xGm_.SetGlobalBuffer((__gm__ T*)x, rows * share.rowLength);
        hGm_.SetGlobalBuffer((__gm__ T*)h, rows * share.streams);
        outGm_.SetGlobalBuffer((__gm__ T*)out, rows * share.streams * share.rowLength);
        const uint32_t weightBytes = (share.streams * sizeof(T) + 31) / 32 * 32;
        pipe->InitBuffer(inX_, BUFFER_NUM, share.tileLength * sizeof(T));
        pipe->InitBuffer(inH_, BUFFER_NUM, weightBytes);
        pipe->InitBuffer(outQ_, BUFFER_NUM, share.tileLength * sizeof(T));
    }
    __aicore__ inline void Process() {
        for (uint32_t i = 0; i < share_.tiles; ++i) {
            const uint64_t tile = share_.firstTile + i;
            const uint64_t row = tile / share_.tilesPerRow;
            const uint32_t part = static_cast<uint32_t>(tile % share_.tilesPerRow);
            const uint32_t len =
                (part + 1 == share_.tilesPerRow) ? share_.lastRowTileLength : share_.tileLength;
            const uint64_t at = static_cast<uint64_t>(part) * share_.tileLength;
            CopyInTile(row, at, len);
            MulAndCopyOut(row, at, len);
        }
    }

private:
    __aicore__ inline void CopyInTile(uint64_t row, uint64_t at, uint32_t len) {
        AscendC::LocalTensor<T> x = inX_.template AllocTensor<T>();
        AscendC::LocalTensor<T> h = inH_.template AllocTensor<T>();
        CopyIn(x, xGm_[row * share_.rowLength + at], len);     // copy_in_x
        CopyIn(h, hGm_[row * share_.streams], share_.streams);  // copy_in_h
        inX_.EnQue(x);
        inH_.EnQue(h);
    }
    __aicore__ inline void MulAndCopyOut(uint64_t row, uint64_t at, uint32_t len) {
        AscendC::LocalTensor<T> x = inX_.template DeQue<T>();
        AscendC::LocalTensor<T> h = inH_.template DeQue<T>();
        // The weights are read by the scalar unit: wait for their copy-in.
        const event_t e = static_cast<event_t>(pipe_->FetchEventID(AscendC::HardEvent::MTE2_S));
        AscendC::SetFlag<AscendC::HardEvent::MTE2_S>(e);
        AscendC::WaitFlag<AscendC::HardEvent::MTE2_S>(e);
        for (uint32_t n = 0; n < share_.streams; ++n) {
            const T weight = h.GetValue(n);
            AscendC::LocalTensor<T> y = outQ_.template AllocTensor<T>();
            AscendC::Muls(y, x, weight, static_cast<int32_t>(len));  // muls
            outQ_.EnQue(y);
            y = outQ_.template DeQue<T>();
            const uint64_t outRow = row * share_.streams + n;
            CopyOut(outGm_[outRow * share_.rowLength + at], y, len);  // copy_out
            outQ_.FreeTensor(y);
        }
        inX_.FreeTensor(x);
        inH_.FreeTensor(h);
    }

    AscendC::TPipe* pipe_ = nullptr;
    AscendC::TQue<AscendC::QuePosition::VECIN, BUFFER_NUM> inX_, inH_;
    AscendC::TQue<AscendC::QuePosition::VECOUT, BUFFER_NUM> outQ_;
    AscendC::GlobalTensor<T> xGm_, hGm_, outGm_;
    CoreShare share_{};
};

}  // namespace

extern "C" __global__ __aicore__ void broadcast_mul_custom(GM_ADDR x, GM_ADDR h, GM_ADDR out,
                                                           GM_ADDR workspace, GM_ADDR tiling) {
    (void)workspace;
    KERNEL_TASK_TYPE_DEFAULT(BROADCAST_MUL_CUSTOM_KERNEL_TYPE);
    GET_TILING_DATA(td, tiling);
    const uint32_t idx = static_cast<uint32_t>(AscendC::GetBlockIdx());
    const bool last = idx + 1 == static_cast<uint32_t>(AscendC::GetBlockNum());
    CoreShare share;
    share.firstTile = static_cast<uint64_t>(idx) * td.tilesPerCore;
    share.tiles = last ? td.lastBlockTiles : td.tilesPerCore;
    share.streams = td.streams;
    share.rowLength = td.rowLength;
    share.tileLength = td.tileLength;
    share.tilesPerRow = td.tilesPerRow;
    share.lastRowTileLength = td.lastRowTileLength;
    AscendC::TPipe pipe;
    if (TILING_KEY_IS(1)) {
        KernelBroadcastMul<DTYPE_X, 1> op;
        op.Init(x, h, out, td.batch, share, &pipe);
        op.Process();
    } else if (TILING_KEY_IS(2)) {
        KernelBroadcastMul<DTYPE_X, 2> op;
        op.Init(x, h, out, td.batch, share, &pipe);
        op.Process();
    }
}
