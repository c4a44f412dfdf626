// Self-test of the kernel_operator.h stand-in (tests/test_kernel_coverage.py): each scenario
// either prints "PASS" or is expected to abort with a given message.
#include <cstdio>
#include <cstring>
#include <string>

#include "kernel_operator.h"

namespace {

using AscendC::DataCopy;
using AscendC::DataCopyExtParams;
using AscendC::DataCopyPad;
using AscendC::DataCopyPadExtParams;
using AscendC::GlobalTensor;
using AscendC::LocalTensor;
using AscendC::QuePosition;
using AscendC::TBuf;
using AscendC::TPipe;
using AscendC::TPosition;
using AscendC::TQue;

half in[64];
half out[64];
uint8_t writes[64];

void Setup() {
    for (int i = 0; i < 64; ++i) in[i] = static_cast<half>(i);
    std::memset(out, 0, sizeof out);
    std::memset(writes, 0, sizeof writes);
    ascend_tune_stub::ResetGm();
    ascend_tune_stub::RegisterGm("in", in, sizeof in, sizeof(half), nullptr);
    ascend_tune_stub::RegisterGm("out", out, sizeof out, sizeof(half), writes);
    ascend_tune_stub::SetBlock(0, 1);
}

struct Odd {
    uint32_t a, b, c;
};

int Check(bool ok, const char* what) {
    std::printf(ok ? "PASS\n" : "WRONG %s\n", what);
    return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string s = argc > 1 ? argv[1] : "";
    Setup();
    TPipe pipe;
    GlobalTensor<half> inGm, outGm;
    inGm.SetGlobalBuffer(in, 64);
    outGm.SetGlobalBuffer(out, 64);
    if (s == "unaligned_data_copy") {  // 15 halves = 30 bytes: the hardware would truncate
        TQue<QuePosition::VECIN, 1> q;
        pipe.InitBuffer(q, 1, 64 * sizeof(half));
        LocalTensor<half> t = q.AllocTensor<half>();
        DataCopy(t, inGm, 15);
    } else if (s == "queue_depth") {
        TQue<QuePosition::VECIN, 1> q;
        pipe.InitBuffer(q, 1, 64);
        LocalTensor<half> a = q.AllocTensor<half>();
        LocalTensor<half> b = q.AllocTensor<half>();
        (void)a;
        (void)b;
    } else if (s == "queue_buffers") {  // depth 2, but only one buffer given
        TQue<QuePosition::VECIN, 2> q;
        pipe.InitBuffer(q, 1, 64);
        LocalTensor<half> a = q.AllocTensor<half>();
        LocalTensor<half> b = q.AllocTensor<half>();
        (void)a;
        (void)b;
    } else if (s == "dequeue_empty") {
        TQue<QuePosition::VECIN, 2> q;
        pipe.InitBuffer(q, 2, 64);
        LocalTensor<half> a = q.AllocTensor<half>();
        q.EnQue(a);
        a = q.DeQue<half>();
        a = q.DeQue<half>();
    } else if (s == "free_queued") {
        TQue<QuePosition::VECIN, 2> q;
        pipe.InitBuffer(q, 2, 64);
        LocalTensor<half> a = q.AllocTensor<half>();
        q.EnQue(a);
        q.FreeTensor(a);
    } else if (s == "ub_overflow") {
        TBuf<TPosition::VECCALC> big, more;
        pipe.InitBuffer(big, 196608 - 32);
        pipe.InitBuffer(more, 64);
    } else if (s == "view_overrun") {  // the view holds 16 elements, the copy moves 32
        GlobalTensor<half> view;
        view.SetGlobalBuffer(in + 16, 16);
        TQue<QuePosition::VECIN, 1> q;
        pipe.InitBuffer(q, 1, 64 * sizeof(half));
        LocalTensor<half> t = q.AllocTensor<half>();
        DataCopy(t, view, 32);
    } else if (s == "tensor_overrun") {  // no view size declared: the tensor bound still holds
        GlobalTensor<half> loose;
        loose.SetGlobalBuffer(in + 48);
        TQue<QuePosition::VECIN, 1> q;
        pipe.InitBuffer(q, 1, 64 * sizeof(half));
        LocalTensor<half> t = q.AllocTensor<half>();
        DataCopy(t, loose, 32);
    } else if (s == "write_input") {
        TQue<QuePosition::VECOUT, 1> q;
        pipe.InitBuffer(q, 1, 64 * sizeof(half));
        LocalTensor<half> t = q.AllocTensor<half>();
        DataCopy(inGm, t, 16);
    } else if (s == "use_after_free") {
        TQue<QuePosition::VECIN, 1> q;
        pipe.InitBuffer(q, 1, 64 * sizeof(half));
        LocalTensor<half> t = q.AllocTensor<half>();
        q.FreeTensor(t);
        AscendC::Adds(t, t, static_cast<half>(1), 16);
    } else if (s == "unaligned_vector_operand") {
        TBuf<TPosition::VECCALC> b;
        pipe.InitBuffer(b, 256);
        LocalTensor<float> t = b.Get<float>();
        AscendC::Adds(t[3], t[3], 1.0f, 8);
    } else if (s == "vector_count_past_tensor") {
        TBuf<TPosition::VECCALC> b;
        pipe.InitBuffer(b, 256);
        LocalTensor<float> t = b.Get<float>();
        AscendC::Muls(t[32], t[32], 2.0f, 40);
    } else if (s == "tiling_words") {  // 12-byte struct: one 8-byte word survives
        Odd src = {1, 2, 3};
        uint8_t bytes[sizeof(Odd)];
        std::memcpy(bytes, &src, sizeof src);
        REGISTER_TILING_DEFAULT(Odd);
        GET_TILING_DATA(td, bytes);
        return Check(td.a == 1 && td.b == 2 && td.c == 0xA5A5A5A5u, "GET_TILING_DATA words");
    } else if (s == "pad_strides") {
        // GM->UB: 2 blocks of 5 halves, 3 halves apart in GM (srcStride 6 bytes); in UB each
        // block rounds up to 32 bytes and dstStride adds one more 32-byte block.
        TBuf<TPosition::VECCALC> b;
        pipe.InitBuffer(b, 256);
        LocalTensor<half> t = b.Get<half>();
        DataCopyExtParams copyIn(2, 5 * sizeof(half), 3 * sizeof(half), 1, 0);
        DataCopyPadExtParams<half> pad(true, 0, 3, static_cast<half>(-1));
        DataCopyPad(t, inGm[1], copyIn, pad);
        bool ok = true;
        for (int i = 0; i < 5; ++i) {
            ok = ok && t.GetValue(i) == static_cast<half>(1 + i);
            ok = ok && t.GetValue(32 + i) == static_cast<half>(9 + i);
        }
        for (int i = 5; i < 8; ++i) ok = ok && t.GetValue(i) == static_cast<half>(-1);
        // UB->GM: the same two UB blocks (srcStride 1 block) to GM 2 halves apart.
        DataCopyExtParams copyOut(2, 5 * sizeof(half), 1, 2 * sizeof(half), 0);
        DataCopyPad(outGm[4], t, copyOut);
        for (int i = 0; i < 64; ++i) {
            const bool written = (i >= 4 && i < 9) || (i >= 11 && i < 16);
            ok = ok && writes[i] == (written ? 1 : 0);
            if (i >= 4 && i < 9) ok = ok && out[i] == static_cast<half>(i - 3);
            if (i >= 11 && i < 16) ok = ok && out[i] == static_cast<half>(i - 2);
        }
        return Check(ok, "DataCopyPad block layout");
    } else {
        std::printf("unknown scenario '%s'\n", s.c_str());
        return 2;
    }
    std::printf("NOT CAUGHT\n");
    return 1;
}
