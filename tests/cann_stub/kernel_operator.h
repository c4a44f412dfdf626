// Host stand-in for the AscendC kernel API (kernel_operator.h), enough to run the example
// vector kernels on a CPU, one block at a time, under AddressSanitizer.
//
// It is stricter than the hardware where the hardware fails silently:
//   * DataCopy GM<->UB aborts unless count * sizeof(T) is a multiple of 32 bytes (the hardware
//     truncates) and the UB address is 32-byte aligned;
//   * every GM access must stay inside the GlobalTensor's declared size and inside a tensor the
//     harness registered (ascend_tune_stub::RegisterGm); writes to a tensor registered without a
//     write counter abort, writes to one with a counter bump one counter per element;
//   * DataCopyPad (DataCopyExtParams: blockCount <= 4095, blockLen in bytes <= 2097151, strides
//     in bytes on the GM side and in 32-byte blocks on the UB side, as AscendC defines them)
//     moves exactly blockLen bytes per block; UB blocks start 32-byte aligned;
//   * TQue enforces its depth and buffer count, and tensors must be EnQue'd before DeQue,
//     DeQue'd before FreeTensor, freed before the queue dies, and not used after FreeTensor;
//   * TPipe aborts when the buffers it hands out exceed the unified buffer
//     (ASCEND_TUNE_UB_BYTES, default 196608 = Ascend 910B);
//   * vector operations abort when an operand starts off a 32-byte boundary or is shorter than
//     the element count; fresh UB memory and DataCopyPad padding hold NaN garbage;
//   * GET_TILING_DATA copies sizeof(T) / 8 uint64 words like the build-generated copy, so the
//     bytes of a struct whose size is not a multiple of 8 are lost (left as 0xA5 garbage).
// Failures print "ascend-tune kernel stub: ..." on stderr and abort().
//
// The harness includes this header too, declares the kernel's entry function, registers every
// GM tensor, then for each block calls ascend_tune_stub::SetBlock(i, n), SetTilingKey(k) and
// the entry, and afterwards reads KeyMatches() (TILING_KEY_IS branches taken) and TaskType()
// (what KERNEL_TASK_TYPE_DEFAULT declared). The TilingData type GET_TILING_DATA declares is
// -DASCEND_TUNE_KERNEL_TILING=<Struct> (what the build generates in a macro-style project),
// else the one named by REGISTER_TILING_DEFAULT in the same scope.
// Compiles as C++11 and later, warning-free under -Wall -Wextra.
#ifndef ASCEND_TUNE_STUB_KERNEL_OPERATOR_H
#define ASCEND_TUNE_STUB_KERNEL_OPERATOR_H

#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <type_traits>
#include <vector>
#if defined(__F16C__)
#include <immintrin.h>
#endif

#define __aicore__
#define __global__
#define __gm__
#define GM_ADDR uint8_t*

#ifndef ASCEND_TUNE_UB_BYTES
#define ASCEND_TUNE_UB_BYTES 196608
#endif

using half = _Float16;

// bfloat16 as the top half of a float, round to nearest even.
struct bfloat16_t {
    uint16_t bits;
    bfloat16_t() : bits(0) {}
    explicit bfloat16_t(float f) : bits(FromFloat(f)) {}
    explicit bfloat16_t(double d) : bits(FromFloat(static_cast<float>(d))) {}
    explicit operator float() const {
        uint32_t u = static_cast<uint32_t>(bits) << 16;
        float f;
        std::memcpy(&f, &u, sizeof f);
        return f;
    }
    explicit operator double() const { return static_cast<double>(static_cast<float>(*this)); }
    static uint16_t FromFloat(float f) {
        uint32_t u;
        std::memcpy(&u, &f, sizeof u);
        if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
        u += 0x7fffu + ((u >> 16) & 1u);
        return static_cast<uint16_t>(u >> 16);
    }
};

enum KernelMetaType {
    KERNEL_TYPE_AIV_ONLY,
    KERNEL_TYPE_AIC_ONLY,
    KERNEL_TYPE_MIX_AIV_1_0,
    KERNEL_TYPE_MIX_AIC_1_0,
    KERNEL_TYPE_MIX_AIC_1_1,
    KERNEL_TYPE_MIX_AIC_1_2,
    KERNEL_TYPE_AICORE,
    KERNEL_TYPE_VECTORCORE,
    KERNEL_TYPE_MIX_AICORE,
    KERNEL_TYPE_MIX_VECTOR_CORE
};

enum pipe_t { PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL };
typedef int32_t event_t;

// ----------------------------------------------------------------------------------------------
// Harness-facing state.
namespace ascend_tune_stub {

inline void Fail(const char* fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
inline void Fail(const char* fmt, ...) {
    std::fflush(stdout);
    std::fprintf(stderr, "ascend-tune kernel stub: ");
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stderr, fmt, ap);
    va_end(ap);
    std::fprintf(stderr, "\n");
    std::fflush(stderr);
    std::abort();
}

struct GmRegion {
    const char* name;
    const uint8_t* base;
    uint64_t bytes;
    uint32_t elemBytes;
    uint8_t* writes;  // one saturating counter per element; nullptr = read-only
};

struct State {
    std::vector<GmRegion> regions;
    int64_t blockIdx = 0;
    int64_t blockNum = 1;
    uint64_t tilingKey = 0;
    int keyMatches = 0;
    int taskType = -1;
    int livePipes = 0;
};

inline State& S() {
    static State state;
    return state;
}

inline void ResetGm() { S().regions.clear(); }

// A GM tensor of `bytes` bytes at `base`; `writes` (one counter per element) makes it writable.
inline void RegisterGm(const char* name, const void* base, uint64_t bytes, uint32_t elemBytes,
                       uint8_t* writes) {
    GmRegion r;
    r.name = name;
    r.base = static_cast<const uint8_t*>(base);
    r.bytes = bytes;
    r.elemBytes = elemBytes;
    r.writes = writes;
    S().regions.push_back(r);
}

inline void SetBlock(int64_t idx, int64_t num) {
    S().blockIdx = idx;
    S().blockNum = num;
    S().keyMatches = 0;
}
inline void SetTilingKey(uint64_t key) { S().tilingKey = key; }
inline int KeyMatches() { return S().keyMatches; }
inline int TaskType() { return S().taskType; }

inline bool KeyIs(uint64_t k) {
    if (S().tilingKey != k) return false;
    ++S().keyMatches;
    return true;
}

// Checks [p, p + bytes) lies inside one registered tensor; records the writes.
inline void GmAccess(const void* p, uint64_t bytes, bool write, const char* what) {
    if (bytes == 0) return;
    const uint8_t* a = static_cast<const uint8_t*>(p);
    for (const GmRegion& r : S().regions) {
        if (a < r.base || a >= r.base + r.bytes) continue;
        const uint64_t off = static_cast<uint64_t>(a - r.base);
        if (off + bytes > r.bytes) {
            Fail("block %lld: %s %s GM bytes [%llu, %llu) of tensor '%s', which has %llu bytes",
                 static_cast<long long>(S().blockIdx), what, write ? "writes" : "reads",
                 static_cast<unsigned long long>(off), static_cast<unsigned long long>(off + bytes),
                 r.name, static_cast<unsigned long long>(r.bytes));
        }
        if (!write) return;
        if (r.writes == nullptr) {
            Fail("block %lld: %s writes input tensor '%s'", static_cast<long long>(S().blockIdx),
                 what, r.name);
        }
        if (off % r.elemBytes != 0 || bytes % r.elemBytes != 0) {
            Fail("block %lld: %s writes a partial element of '%s'",
                 static_cast<long long>(S().blockIdx), what, r.name);
        }
        for (uint64_t e = off / r.elemBytes; e < (off + bytes) / r.elemBytes; ++e) {
            if (r.writes[e] != 0xff) ++r.writes[e];
        }
        return;
    }
    Fail("block %lld: %s %s %llu GM bytes at %p, outside every tensor",
         static_cast<long long>(S().blockIdx), what, write ? "writes" : "reads",
         static_cast<unsigned long long>(bytes), p);
}

// GET_TILING_DATA: sizeof(T) / 8 uint64 words, as the build-generated copy does.
template <typename T>
inline void CopyTilingWords(T* dst, const uint8_t* src) {
    static_assert(std::is_trivially_copyable<T>::value, "TilingData must be trivially copyable");
    if (src == nullptr) Fail("GET_TILING_DATA with a null tiling pointer");
    unsigned char* d = reinterpret_cast<unsigned char*>(dst);
    std::memset(d, 0xA5, sizeof(T));
    for (size_t w = 0; w < sizeof(T) / sizeof(uint64_t); ++w) {
        std::memcpy(d + w * sizeof(uint64_t), src + w * sizeof(uint64_t), sizeof(uint64_t));
    }
}

// Number conversions used by the vector instructions (compute in double, round once).
template <typename T>
inline double ToD(T v) {
    return static_cast<double>(v);
}
template <>
inline double ToD<bfloat16_t>(bfloat16_t v) {
    return static_cast<double>(v);
}
// float16 conversions: F16C instructions when the compiler may use them (GCC 12 calls libgcc's
// soft routines for _Float16 otherwise, which dominated the run time), else a table to widen.
inline float HalfToFloat(half v) {
    uint16_t bits;
    std::memcpy(&bits, &v, sizeof bits);
#if defined(__F16C__)
    return _cvtsh_ss(bits);
#else
    static float* table = nullptr;
    if (table == nullptr) {
        table = new float[65536];
        for (uint32_t b = 0; b < 65536; ++b) {
            const uint16_t w = static_cast<uint16_t>(b);
            half h;
            std::memcpy(&h, &w, sizeof h);
            table[b] = static_cast<float>(h);
        }
    }
    return table[bits];
#endif
}
inline half FloatToHalf(float v) {  // round to nearest even
#if defined(__F16C__)
    const uint16_t bits = static_cast<uint16_t>(_cvtss_sh(v, 0));
    half h;
    std::memcpy(&h, &bits, sizeof h);
    return h;
#else
    return static_cast<half>(v);
#endif
}
template <>
inline double ToD<half>(half v) {
    return static_cast<double>(HalfToFloat(v));
}
template <typename T>
inline T FromD(double v) {
    return static_cast<T>(v);
}
template <>
inline half FromD<half>(double v) {
    // Through float. Double rounding differs from one rounding only within 2^-29 relative of a
    // half tie: never for sums and products of halves (exact in float), negligible otherwise.
    return FloatToHalf(static_cast<float>(v));
}
template <>
inline bfloat16_t FromD<bfloat16_t>(double v) {
    return bfloat16_t(v);
}

struct UbSlot {
    uint8_t* data = nullptr;
    uint32_t bytes = 0;
    int state = 0;  // 0 free, 1 allocated, 2 queued
    uint32_t generation = 0;
    bool permanent = false;  // TBuf
};

inline uint8_t* UbAlloc(uint32_t bytes) {
    void* p = nullptr;
    if (posix_memalign(&p, 32, bytes) != 0) Fail("out of host memory for %u UB bytes", bytes);
    std::memset(p, 0xff, bytes);  // NaN garbage
    return static_cast<uint8_t*>(p);
}

}  // namespace ascend_tune_stub

#define KERNEL_TASK_TYPE_DEFAULT(type) (::ascend_tune_stub::S().taskType = static_cast<int>(type))
#define TILING_KEY_IS(k) (::ascend_tune_stub::KeyIs(static_cast<uint64_t>(k)))
#define REGISTER_TILING_DEFAULT(T) typedef T AscendTuneRegisteredTiling
#ifndef ASCEND_TUNE_KERNEL_TILING
#define ASCEND_TUNE_KERNEL_TILING AscendTuneRegisteredTiling
#endif
#define GET_TILING_DATA(name, tiling) \
    ASCEND_TUNE_KERNEL_TILING name;   \
    ::ascend_tune_stub::CopyTilingWords(&name, (tiling))
#define GET_TILING_DATA_WITH_STRUCT(T, name, tiling) \
    T name;                                          \
    ::ascend_tune_stub::CopyTilingWords(&name, (tiling))

// ----------------------------------------------------------------------------------------------
namespace AscendC {

enum class TPosition {
    GM,
    A1,
    A2,
    B1,
    B2,
    C1,
    C2,
    CO1,
    CO2,
    VECIN,
    VECOUT,
    VECCALC,
    LCM = VECCALC
};
using QuePosition = TPosition;
enum class RoundMode {
    CAST_NONE,
    CAST_RINT,
    CAST_FLOOR,
    CAST_CEIL,
    CAST_ROUND,
    CAST_TRUNC,
    CAST_ODD
};
enum class HardEvent {
    MTE2_V,
    V_MTE2,
    V_MTE3,
    MTE3_V,
    V_S,
    S_V,
    MTE2_S,
    S_MTE2,
    MTE3_S,
    S_MTE3,
    MTE2_MTE3,
    MTE3_MTE2
};

__aicore__ inline int64_t GetBlockIdx() { return ::ascend_tune_stub::S().blockIdx; }
__aicore__ inline int64_t GetBlockNum() { return ::ascend_tune_stub::S().blockNum; }

template <HardEvent e>
__aicore__ inline void SetFlag(event_t) {}
template <HardEvent e>
__aicore__ inline void WaitFlag(event_t) {}
template <pipe_t p>
__aicore__ inline void PipeBarrier() {}

template <typename T>
class GlobalTensor {
public:
    __aicore__ inline void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize) {
        addr_ = buffer;
        size_ = bufferSize;
    }
    __aicore__ inline void SetGlobalBuffer(__gm__ T* buffer) {
        addr_ = buffer;
        size_ = std::numeric_limits<uint64_t>::max();
    }
    __aicore__ inline GlobalTensor operator[](uint64_t offset) const {
        if (addr_ == nullptr)
            ::ascend_tune_stub::Fail("GlobalTensor indexed before SetGlobalBuffer");
        if (offset > size_) {
            ::ascend_tune_stub::Fail("block %lld: GlobalTensor[%llu] past its declared size %llu",
                                     static_cast<long long>(GetBlockIdx()),
                                     static_cast<unsigned long long>(offset),
                                     static_cast<unsigned long long>(size_));
        }
        GlobalTensor t;
        t.addr_ = addr_ + offset;
        t.size_ = size_ == std::numeric_limits<uint64_t>::max() ? size_ : size_ - offset;
        return t;
    }
    __aicore__ inline uint64_t GetSize() const { return size_; }
    __aicore__ inline __gm__ T* GetPhyAddr() const { return addr_; }
    __aicore__ inline T GetValue(uint64_t i) const {
        Check(i, 1, false, "GlobalTensor::GetValue");
        return addr_[i];
    }
    __aicore__ inline void SetValue(uint64_t i, T v) const {
        Check(i, 1, true, "GlobalTensor::SetValue");
        addr_[i] = v;
    }
    // [offset, offset + count) must lie in the declared size and in a registered tensor.
    void Check(uint64_t offsetElems, uint64_t count, bool write, const char* what) const {
        if (addr_ == nullptr) ::ascend_tune_stub::Fail("%s on a GlobalTensor without buffer", what);
        if (offsetElems + count > size_) {
            ::ascend_tune_stub::Fail(
                "block %lld: %s touches elements [%llu, %llu) of a GlobalTensor declared with %llu",
                static_cast<long long>(GetBlockIdx()), what,
                static_cast<unsigned long long>(offsetElems),
                static_cast<unsigned long long>(offsetElems + count),
                static_cast<unsigned long long>(size_));
        }
        ::ascend_tune_stub::GmAccess(addr_ + offsetElems, count * sizeof(T), write, what);
    }

private:
    T* addr_ = nullptr;
    uint64_t size_ = 0;
};

template <typename T>
class LocalTensor {
public:
    LocalTensor() {}
    LocalTensor(::ascend_tune_stub::UbSlot* slot, uint32_t byteOffset)
        : slot_(slot), gen_(slot->generation), byteOffset_(byteOffset) {}
    __aicore__ inline LocalTensor operator[](uint32_t offset) const {
        Live("LocalTensor[]");
        if (offset > GetSize()) {
            ::ascend_tune_stub::Fail("LocalTensor[%u] past its %u elements", offset, GetSize());
        }
        return LocalTensor(slot_, gen_, byteOffset_ + offset * static_cast<uint32_t>(sizeof(T)));
    }
    __aicore__ inline uint32_t GetSize() const {
        return slot_ == nullptr ? 0
                                : (slot_->bytes - byteOffset_) / static_cast<uint32_t>(sizeof(T));
    }
    __aicore__ inline T GetValue(uint32_t i) const {
        Need(i + 1, "LocalTensor::GetValue", false);
        return Ptr()[i];
    }
    __aicore__ inline void SetValue(uint32_t i, T v) const {
        Need(i + 1, "LocalTensor::SetValue", false);
        Ptr()[i] = v;
    }
    template <typename U>
    __aicore__ inline LocalTensor<U> ReinterpretCast() const {
        Live("ReinterpretCast");
        return LocalTensor<U>(slot_, gen_, byteOffset_);
    }
    T* Ptr() const { return reinterpret_cast<T*>(slot_->data + byteOffset_); }
    void Live(const char* what) const {
        if (slot_ == nullptr) ::ascend_tune_stub::Fail("%s on an unallocated LocalTensor", what);
        if (slot_->generation != gen_ || (slot_->state == 0 && !slot_->permanent)) {
            ::ascend_tune_stub::Fail("%s on a LocalTensor after FreeTensor", what);
        }
    }
    // The operand holds `count` elements from a 32-byte aligned start (when `aligned`).
    void Need(uint64_t count, const char* what, bool aligned = true) const {
        Live(what);
        if (aligned && byteOffset_ % 32 != 0) {
            ::ascend_tune_stub::Fail("%s: UB operand at byte offset %u is not 32-byte aligned",
                                     what, byteOffset_);
        }
        if (count > GetSize()) {
            ::ascend_tune_stub::Fail("block %lld: %s needs %llu elements, the UB tensor has %u",
                                     static_cast<long long>(GetBlockIdx()), what,
                                     static_cast<unsigned long long>(count), GetSize());
        }
    }
    LocalTensor(::ascend_tune_stub::UbSlot* slot, uint32_t gen, uint32_t byteOffset)
        : slot_(slot), gen_(gen), byteOffset_(byteOffset) {}
    ::ascend_tune_stub::UbSlot* Slot() const { return slot_; }
    uint32_t Generation() const { return gen_; }

private:
    ::ascend_tune_stub::UbSlot* slot_ = nullptr;
    uint32_t gen_ = 0;
    uint32_t byteOffset_ = 0;
};

class TPipe;
TPipe*& CurrentPipe();

template <TPosition pos, int32_t depth>
class TQue {
public:
    TQue() {}
    TQue(const TQue&) = delete;
    TQue& operator=(const TQue&) = delete;
    ~TQue() {
        for (::ascend_tune_stub::UbSlot& s : slots_) {
            if (s.state != 0) {
                std::fprintf(stderr,
                             "ascend-tune kernel stub: a TQue dies with a tensor not freed\n");
                std::abort();
            }
            std::free(s.data);
        }
    }
    template <typename T>
    __aicore__ inline LocalTensor<T> AllocTensor() {
        if (slots_.empty()) ::ascend_tune_stub::Fail("AllocTensor on a TQue without InitBuffer");
        size_t outstanding = 0;
        for (const ::ascend_tune_stub::UbSlot& s : slots_) outstanding += s.state != 0 ? 1 : 0;
        if (outstanding >= static_cast<size_t>(depth)) {
            ::ascend_tune_stub::Fail(
                "AllocTensor with %zu tensors outstanding on a TQue of depth %d", outstanding,
                depth);
        }
        for (::ascend_tune_stub::UbSlot& s : slots_) {
            if (s.state == 0) {
                s.state = 1;
                ++s.generation;
                return LocalTensor<T>(&s, 0);
            }
        }
        ::ascend_tune_stub::Fail("AllocTensor with all %zu buffers of the TQue outstanding",
                                 slots_.size());
    }
    template <typename T>
    __aicore__ inline bool EnQue(const LocalTensor<T>& t) {
        Own(t, "EnQue");
        if (t.Slot()->state != 1) ::ascend_tune_stub::Fail("EnQue of a tensor already queued");
        if (queued_.size() >= static_cast<size_t>(depth)) {
            ::ascend_tune_stub::Fail("EnQue beyond the TQue depth %d", depth);
        }
        t.Slot()->state = 2;
        queued_.push_back(t.Slot());
        return true;
    }
    template <typename T>
    __aicore__ inline LocalTensor<T> DeQue() {
        if (queued_.empty()) ::ascend_tune_stub::Fail("DeQue from an empty TQue");
        ::ascend_tune_stub::UbSlot* s = queued_.front();
        queued_.pop_front();
        s->state = 1;
        return LocalTensor<T>(s, s->generation, 0);
    }
    template <typename T>
    __aicore__ inline void FreeTensor(const LocalTensor<T>& t) {
        Own(t, "FreeTensor");
        if (t.Slot()->state != 1) ::ascend_tune_stub::Fail("FreeTensor of a tensor still queued");
        t.Slot()->state = 0;
        ++t.Slot()->generation;
        std::memset(t.Slot()->data, 0xff, t.Slot()->bytes);
    }
    void Init(uint32_t num, uint32_t bytes) {
        if (!slots_.empty()) ::ascend_tune_stub::Fail("InitBuffer twice on one TQue");
        if (num == 0 || num > 2 * static_cast<uint32_t>(depth) || num > 8) {
            ::ascend_tune_stub::Fail("InitBuffer(que, %u, ...) on a TQue of depth %d", num, depth);
        }
        slots_.resize(num);
        for (::ascend_tune_stub::UbSlot& s : slots_) {
            s.bytes = bytes;
            s.data = ::ascend_tune_stub::UbAlloc(bytes);
        }
    }

private:
    template <typename T>
    void Own(const LocalTensor<T>& t, const char* what) const {
        t.Live(what);
        for (const ::ascend_tune_stub::UbSlot& s : slots_) {
            if (&s == t.Slot()) return;
        }
        ::ascend_tune_stub::Fail("%s of a tensor from another queue", what);
    }
    std::vector<::ascend_tune_stub::UbSlot> slots_;
    std::deque<::ascend_tune_stub::UbSlot*> queued_;
};

template <TPosition pos>
class TBuf {
public:
    TBuf() {}
    TBuf(const TBuf&) = delete;
    TBuf& operator=(const TBuf&) = delete;
    ~TBuf() { std::free(slot_.data); }
    template <typename T>
    __aicore__ inline LocalTensor<T> Get() {
        if (slot_.data == nullptr) ::ascend_tune_stub::Fail("TBuf::Get before InitBuffer");
        return LocalTensor<T>(&slot_, 0);
    }
    template <typename T>
    __aicore__ inline LocalTensor<T> Get(uint32_t len) {
        LocalTensor<T> t = Get<T>();
        if (len > t.GetSize()) ::ascend_tune_stub::Fail("TBuf::Get(%u) past the buffer", len);
        return t;
    }
    void Init(uint32_t bytes) {
        if (slot_.data != nullptr) ::ascend_tune_stub::Fail("InitBuffer twice on one TBuf");
        slot_.bytes = bytes;
        slot_.permanent = true;
        slot_.state = 1;
        slot_.data = ::ascend_tune_stub::UbAlloc(bytes);
    }

private:
    ::ascend_tune_stub::UbSlot slot_;
};

class TPipe {
public:
    TPipe() {
        if (++::ascend_tune_stub::S().livePipes != 1) ::ascend_tune_stub::Fail("a second TPipe");
        CurrentPipe() = this;
    }
    TPipe(const TPipe&) = delete;
    TPipe& operator=(const TPipe&) = delete;
    ~TPipe() {
        --::ascend_tune_stub::S().livePipes;
        CurrentPipe() = nullptr;
    }
    template <class Q>
    __aicore__ inline bool InitBuffer(Q& que, uint8_t num, uint32_t len) {
        const uint32_t bytes = Round(len);
        Charge(static_cast<uint64_t>(num) * bytes);
        que.Init(num, bytes);
        return true;
    }
    template <TPosition pos>
    __aicore__ inline bool InitBuffer(TBuf<pos>& buf, uint32_t len) {
        const uint32_t bytes = Round(len);
        Charge(bytes);
        buf.Init(bytes);
        return true;
    }
    template <HardEvent e>
    __aicore__ inline event_t FetchEventID() {
        return 0;
    }
    __aicore__ inline event_t FetchEventID(HardEvent) { return 0; }
    uint64_t UsedBytes() const { return used_; }

private:
    static uint32_t Round(uint32_t len) {
        if (len == 0) ::ascend_tune_stub::Fail("InitBuffer of 0 bytes");
        return (len + 31u) / 32u * 32u;
    }
    void Charge(uint64_t bytes) {
        used_ += bytes;
        if (used_ > ASCEND_TUNE_UB_BYTES) {
            ::ascend_tune_stub::Fail("block %lld: TPipe buffers take %llu bytes, the UB has %d",
                                     static_cast<long long>(GetBlockIdx()),
                                     static_cast<unsigned long long>(used_), ASCEND_TUNE_UB_BYTES);
        }
    }
    uint64_t used_ = 0;
};

inline TPipe*& CurrentPipe() {
    static TPipe* pipe = nullptr;
    return pipe;
}
__aicore__ inline TPipe* GetTPipePtr() { return CurrentPipe(); }

// ---------------------------------------------------------------------------------- data copy
struct DataCopyExtParams {
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;   // bytes
    uint32_t srcStride = 0;  // gap between blocks: bytes in GM, 32-byte blocks in UB
    uint32_t dstStride = 0;  // same units by side
    uint32_t rsv = 0;
    DataCopyExtParams() {}
    DataCopyExtParams(uint16_t count, uint32_t len, uint32_t srcStrideIn, uint32_t dstStrideIn,
                      uint32_t rsvIn)
        : blockCount(count),
          blockLen(len),
          srcStride(srcStrideIn),
          dstStride(dstStrideIn),
          rsv(rsvIn) {}
};

template <typename T>
struct DataCopyPadExtParams {
    bool isPad = false;
    uint8_t leftPadding = 0;   // elements
    uint8_t rightPadding = 0;  // elements
    T paddingValue = T();
    DataCopyPadExtParams() {}
    DataCopyPadExtParams(bool isPadValue, uint8_t left, uint8_t right, T value)
        : isPad(isPadValue), leftPadding(left), rightPadding(right), paddingValue(value) {}
};

namespace detail {
template <typename T>
inline void CheckCount(uint32_t count, const char* what) {
    if ((static_cast<uint64_t>(count) * sizeof(T)) % 32 != 0) {
        ::ascend_tune_stub::Fail(
            "block %lld: %s of %u elements = %llu bytes, not a multiple of 32 (the hardware "
            "truncates; use DataCopyPad)",
            static_cast<long long>(GetBlockIdx()), what, count,
            static_cast<unsigned long long>(static_cast<uint64_t>(count) * sizeof(T)));
    }
}
inline void CheckExt(const DataCopyExtParams& p, uint32_t elem, const char* what) {
    if (p.blockCount == 0 || p.blockCount > 4095) {
        ::ascend_tune_stub::Fail("%s: blockCount %u outside [1, 4095]", what, p.blockCount);
    }
    if (p.blockLen == 0 || p.blockLen > 2097151) {
        ::ascend_tune_stub::Fail("%s: blockLen %u bytes outside [1, 2097151]", what, p.blockLen);
    }
    if (p.blockLen % elem != 0) {
        ::ascend_tune_stub::Fail("%s: blockLen %u bytes is not whole elements", what, p.blockLen);
    }
}
inline uint64_t Align32(uint64_t b) { return (b + 31) / 32 * 32; }
}  // namespace detail

template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src,
                                const uint32_t count) {
    detail::CheckCount<T>(count, "DataCopy GM->UB");
    dst.Need(count, "DataCopy GM->UB");
    src.Check(0, count, false, "DataCopy GM->UB");
    std::memcpy(dst.Ptr(), src.GetPhyAddr(), static_cast<size_t>(count) * sizeof(T));
}

template <typename T>
__aicore__ inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src,
                                const uint32_t count) {
    detail::CheckCount<T>(count, "DataCopy UB->GM");
    src.Need(count, "DataCopy UB->GM");
    dst.Check(0, count, true, "DataCopy UB->GM");
    std::memcpy(dst.GetPhyAddr(), src.Ptr(), static_cast<size_t>(count) * sizeof(T));
}

template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                const uint32_t count) {
    detail::CheckCount<T>(count, "DataCopy UB->UB");
    dst.Need(count, "DataCopy UB->UB");
    src.Need(count, "DataCopy UB->UB");
    std::memmove(dst.Ptr(), src.Ptr(), static_cast<size_t>(count) * sizeof(T));
}

// GM -> UB: blockCount blocks of blockLen bytes, srcStride bytes apart in GM; in UB each block
// starts 32-byte aligned: leftPadding elements, the data, rightPadding elements, garbage up to
// the next 32 bytes, then dstStride more 32-byte blocks.
template <typename T>
__aicore__ inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src,
                                   const DataCopyExtParams& p, const DataCopyPadExtParams<T>& pad) {
    const char* what = "DataCopyPad GM->UB";
    detail::CheckExt(p, sizeof(T), what);
    if (pad.leftPadding * sizeof(T) > 32 || pad.rightPadding * sizeof(T) > 32) {
        ::ascend_tune_stub::Fail("%s: padding over 32 bytes", what);
    }
    const uint64_t lead = pad.leftPadding * sizeof(T);
    const uint64_t ubBlock = detail::Align32(lead + p.blockLen + pad.rightPadding * sizeof(T)) +
                             static_cast<uint64_t>(p.dstStride) * 32;
    const uint64_t gmBlock = static_cast<uint64_t>(p.blockLen) + p.srcStride;
    const uint64_t gmEnd = (p.blockCount - 1) * gmBlock + p.blockLen;
    const uint64_t ubEnd = (p.blockCount - 1) * ubBlock +
                           detail::Align32(lead + p.blockLen + pad.rightPadding * sizeof(T));
    dst.Need(ubEnd / sizeof(T), what);
    src.Check(0, gmEnd / sizeof(T), false, what);
    for (uint32_t b = 0; b < p.blockCount; ++b) {
        src.Check(b * gmBlock / sizeof(T), p.blockLen / sizeof(T), false, what);
        uint8_t* u = reinterpret_cast<uint8_t*>(dst.Ptr()) + b * ubBlock;
        const uint64_t used = detail::Align32(lead + p.blockLen + pad.rightPadding * sizeof(T));
        std::memset(u, 0xff, used);
        T* e = reinterpret_cast<T*>(u);
        if (pad.isPad) {
            for (uint32_t i = 0; i < pad.leftPadding; ++i) e[i] = pad.paddingValue;
        }
        std::memcpy(u + lead, reinterpret_cast<const uint8_t*>(src.GetPhyAddr()) + b * gmBlock,
                    p.blockLen);
        if (pad.isPad) {
            T* r = reinterpret_cast<T*>(u + lead + p.blockLen);
            for (uint32_t i = 0; i < pad.rightPadding; ++i) r[i] = pad.paddingValue;
        }
    }
}

// UB -> GM: blockCount blocks of blockLen bytes; UB blocks start 32-byte aligned with srcStride
// more 32-byte blocks between them; GM blocks are dstStride bytes apart.
template <typename T>
__aicore__ inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src,
                                   const DataCopyExtParams& p) {
    const char* what = "DataCopyPad UB->GM";
    detail::CheckExt(p, sizeof(T), what);
    const uint64_t ubBlock = detail::Align32(p.blockLen) + static_cast<uint64_t>(p.srcStride) * 32;
    const uint64_t gmBlock = static_cast<uint64_t>(p.blockLen) + p.dstStride;
    src.Need(((p.blockCount - 1) * ubBlock + p.blockLen) / sizeof(T), what);
    dst.Check(0, ((p.blockCount - 1) * gmBlock + p.blockLen) / sizeof(T), false, what);
    for (uint32_t b = 0; b < p.blockCount; ++b) {
        dst.Check(b * gmBlock / sizeof(T), p.blockLen / sizeof(T), true, what);
        std::memcpy(reinterpret_cast<uint8_t*>(dst.GetPhyAddr()) + b * gmBlock,
                    reinterpret_cast<const uint8_t*>(src.Ptr()) + b * ubBlock, p.blockLen);
    }
}

// ------------------------------------------------------------------------------ vector compute
namespace detail {
template <typename T, typename F>
inline void Unary(const LocalTensor<T>& dst, const LocalTensor<T>& src, int32_t count,
                  const char* what, F f) {
    if (count < 0) ::ascend_tune_stub::Fail("%s with count %d", what, count);
    dst.Need(static_cast<uint32_t>(count), what);
    src.Need(static_cast<uint32_t>(count), what);
    T* d = dst.Ptr();
    const T* s = src.Ptr();
    for (int32_t i = 0; i < count; ++i) {
        d[i] = ::ascend_tune_stub::FromD<T>(f(::ascend_tune_stub::ToD(s[i])));
    }
}
template <typename T, typename F>
inline void Binary(const LocalTensor<T>& dst, const LocalTensor<T>& a, const LocalTensor<T>& b,
                   int32_t count, const char* what, F f) {
    if (count < 0) ::ascend_tune_stub::Fail("%s with count %d", what, count);
    dst.Need(static_cast<uint32_t>(count), what);
    a.Need(static_cast<uint32_t>(count), what);
    b.Need(static_cast<uint32_t>(count), what);
    T* d = dst.Ptr();
    const T* x = a.Ptr();
    const T* y = b.Ptr();
    for (int32_t i = 0; i < count; ++i) {
        d[i] = ::ascend_tune_stub::FromD<T>(
            f(::ascend_tune_stub::ToD(x[i]), ::ascend_tune_stub::ToD(y[i])));
    }
}
struct AddF {
    double operator()(double a, double b) const { return a + b; }
};
struct SubF {
    double operator()(double a, double b) const { return a - b; }
};
struct MulF {
    double operator()(double a, double b) const { return a * b; }
};
struct DivF {
    double operator()(double a, double b) const { return a / b; }
};
struct MaxF {
    double operator()(double a, double b) const { return a > b ? a : b; }
};
struct MinF {
    double operator()(double a, double b) const { return a < b ? a : b; }
};
struct ExpF {
    double operator()(double a) const { return std::exp(static_cast<float>(a)); }
};
struct LnF {
    double operator()(double a) const { return std::log(a); }
};
struct SqrtF {
    double operator()(double a) const { return std::sqrt(a); }
};
struct AbsF {
    double operator()(double a) const { return std::fabs(a); }
};
struct RecF {
    double operator()(double a) const { return 1.0 / a; }
};
struct ScalarF {
    double s;
    int op;  // 0 add, 1 mul, 2 max, 3 min
    double operator()(double a) const {
        return op == 0 ? a + s : op == 1 ? a * s : op == 2 ? (a > s ? a : s) : (a < s ? a : s);
    }
};
}  // namespace detail

template <typename T>
__aicore__ inline void Add(const LocalTensor<T>& d, const LocalTensor<T>& a,
                           const LocalTensor<T>& b, const int32_t& count) {
    detail::Binary(d, a, b, count, "Add", detail::AddF());
}
template <typename T>
__aicore__ inline void Sub(const LocalTensor<T>& d, const LocalTensor<T>& a,
                           const LocalTensor<T>& b, const int32_t& count) {
    detail::Binary(d, a, b, count, "Sub", detail::SubF());
}
template <typename T>
__aicore__ inline void Mul(const LocalTensor<T>& d, const LocalTensor<T>& a,
                           const LocalTensor<T>& b, const int32_t& count) {
    detail::Binary(d, a, b, count, "Mul", detail::MulF());
}
template <typename T>
__aicore__ inline void Div(const LocalTensor<T>& d, const LocalTensor<T>& a,
                           const LocalTensor<T>& b, const int32_t& count) {
    detail::Binary(d, a, b, count, "Div", detail::DivF());
}
template <typename T>
__aicore__ inline void Max(const LocalTensor<T>& d, const LocalTensor<T>& a,
                           const LocalTensor<T>& b, const int32_t& count) {
    detail::Binary(d, a, b, count, "Max", detail::MaxF());
}
template <typename T>
__aicore__ inline void Min(const LocalTensor<T>& d, const LocalTensor<T>& a,
                           const LocalTensor<T>& b, const int32_t& count) {
    detail::Binary(d, a, b, count, "Min", detail::MinF());
}
template <typename T>
__aicore__ inline void Exp(const LocalTensor<T>& d, const LocalTensor<T>& s, const int32_t& count) {
    detail::Unary(d, s, count, "Exp", detail::ExpF());
}
template <typename T>
__aicore__ inline void Ln(const LocalTensor<T>& d, const LocalTensor<T>& s, const int32_t& count) {
    detail::Unary(d, s, count, "Ln", detail::LnF());
}
template <typename T>
__aicore__ inline void Sqrt(const LocalTensor<T>& d, const LocalTensor<T>& s,
                            const int32_t& count) {
    detail::Unary(d, s, count, "Sqrt", detail::SqrtF());
}
template <typename T>
__aicore__ inline void Abs(const LocalTensor<T>& d, const LocalTensor<T>& s, const int32_t& count) {
    detail::Unary(d, s, count, "Abs", detail::AbsF());
}
template <typename T>
__aicore__ inline void Reciprocal(const LocalTensor<T>& d, const LocalTensor<T>& s,
                                  const int32_t& count) {
    detail::Unary(d, s, count, "Reciprocal", detail::RecF());
}
template <typename T>
__aicore__ inline void Adds(const LocalTensor<T>& d, const LocalTensor<T>& s, const T& v,
                            const int32_t& count) {
    detail::ScalarF f = {::ascend_tune_stub::ToD(v), 0};
    detail::Unary(d, s, count, "Adds", f);
}
template <typename T>
__aicore__ inline void Muls(const LocalTensor<T>& d, const LocalTensor<T>& s, const T& v,
                            const int32_t& count) {
    detail::ScalarF f = {::ascend_tune_stub::ToD(v), 1};
    detail::Unary(d, s, count, "Muls", f);
}
template <typename T>
__aicore__ inline void Maxs(const LocalTensor<T>& d, const LocalTensor<T>& s, const T& v,
                            const int32_t& count) {
    detail::ScalarF f = {::ascend_tune_stub::ToD(v), 2};
    detail::Unary(d, s, count, "Maxs", f);
}
template <typename T>
__aicore__ inline void Mins(const LocalTensor<T>& d, const LocalTensor<T>& s, const T& v,
                            const int32_t& count) {
    detail::ScalarF f = {::ascend_tune_stub::ToD(v), 3};
    detail::Unary(d, s, count, "Mins", f);
}
template <typename T>
__aicore__ inline void Duplicate(const LocalTensor<T>& d, const T& v, const int32_t& count) {
    if (count < 0) ::ascend_tune_stub::Fail("Duplicate with count %d", count);
    d.Need(static_cast<uint32_t>(count), "Duplicate");
    T* p = d.Ptr();
    for (int32_t i = 0; i < count; ++i) p[i] = v;
}

template <typename D, typename S>
__aicore__ inline void Cast(const LocalTensor<D>& dst, const LocalTensor<S>& src,
                            const RoundMode& mode, const uint32_t count) {
    static_assert(!std::is_same<D, S>::value, "Cast between equal types");
    dst.Need(count, "Cast");
    src.Need(count, "Cast");
    D* d = dst.Ptr();
    const S* s = src.Ptr();
    for (uint32_t i = 0; i < count; ++i) {
        double v = ::ascend_tune_stub::ToD(s[i]);
        switch (mode) {
            case RoundMode::CAST_FLOOR:
                v = std::floor(v);
                break;
            case RoundMode::CAST_CEIL:
                v = std::ceil(v);
                break;
            case RoundMode::CAST_ROUND:
                v = std::round(v);
                break;
            case RoundMode::CAST_TRUNC:
                v = std::trunc(v);
                break;
            default:
                break;  // NONE / RINT / ODD: round to nearest even in the conversion
        }
        d[i] = ::ascend_tune_stub::FromD<D>(v);
    }
}

// Level-2 reductions: dst[0] = reduce(src[0, count)); the work tensor is scribbled on.
template <typename T>
__aicore__ inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                 const LocalTensor<T>& work, const int32_t count) {
    if (count <= 0) ::ascend_tune_stub::Fail("ReduceSum with count %d", count);
    src.Need(static_cast<uint32_t>(count), "ReduceSum");
    dst.Need(1, "ReduceSum");
    work.Need(1, "ReduceSum");
    double acc = 0;
    const T* s = src.Ptr();
    for (int32_t i = 0; i < count; ++i) acc += ::ascend_tune_stub::ToD(s[i]);
    const uint32_t scribble = work.GetSize() < 64 ? work.GetSize() : 64;
    std::memset(work.Ptr(), 0xff, scribble * sizeof(T));
    dst.Ptr()[0] = ::ascend_tune_stub::FromD<T>(acc);
}
template <typename T>
__aicore__ inline void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                 const LocalTensor<T>& work, const int32_t count,
                                 bool calIndex = false) {
    if (count <= 0) ::ascend_tune_stub::Fail("ReduceMax with count %d", count);
    if (calIndex) ::ascend_tune_stub::Fail("ReduceMax calIndex is not modelled");
    src.Need(static_cast<uint32_t>(count), "ReduceMax");
    dst.Need(1, "ReduceMax");
    work.Need(1, "ReduceMax");
    const T* s = src.Ptr();
    double m = ::ascend_tune_stub::ToD(s[0]);
    for (int32_t i = 1; i < count; ++i) {
        const double v = ::ascend_tune_stub::ToD(s[i]);
        if (v > m || v != v) m = v;
    }
    const uint32_t scribble = work.GetSize() < 64 ? work.GetSize() : 64;
    std::memset(work.Ptr(), 0xff, scribble * sizeof(T));
    dst.Ptr()[0] = ::ascend_tune_stub::FromD<T>(m);
}

}  // namespace AscendC

#endif  // ASCEND_TUNE_STUB_KERNEL_OPERATOR_H
