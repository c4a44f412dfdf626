// Stand-in for tiling/platform/platform_ascendc.h (CANN 8.1
// ascendc/include/highlevel_api/tiling/platform/platform_ascendc.h; ascendc_tiling.md §2.3).
// Only the 8.1 names. fe::PlatFormInfos is opaque in CANN; here its public members are the
// test's knobs (defaults: Ascend910B3, 20 AIC / 40 AIV, 16 MiB library workspace).
#ifndef ASCEND_TUNE_STUB_PLATFORM_ASCENDC_H
#define ASCEND_TUNE_STUB_PLATFORM_ASCENDC_H
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace fe {
class PlatFormInfos {
public:
    uint32_t aicCoreNum = 20;
    uint32_t aivCoreNum = 40;
    uint32_t libApiWorkSpaceSize = 16777216;  // 910B: user workspace starts 16 MiB in
    uint64_t ubSize = 196608;
    uint64_t l1Size = 524288;
    uint64_t l0aSize = 65536;
    uint64_t l0bSize = 65536;
    uint64_t l0cSize = 131072;
    uint64_t l2Size = 201326592;
    uint64_t hbmSize = 68719476736ULL;
    int socVersion = 1;  // platform_ascendc::SocVersion::ASCEND910B
};
}  // namespace fe

namespace platform_ascendc {
enum class CoreMemType { L0_A = 0, L0_B = 1, L0_C = 2, L1 = 3, L2 = 4, UB = 5, HBM = 6, RESERVED };
enum class SocVersion { ASCEND910 = 0, ASCEND910B, ASCEND310P, ASCEND310B, RESERVED_VERSION = 99999 };

class PlatformAscendC {
public:
    PlatformAscendC() = delete;
    explicit PlatformAscendC(fe::PlatFormInfos* platformInfo) : info_(platformInfo) {
        if (info_ == nullptr) {
            std::fprintf(stderr, "CANN stub: PlatformAscendC built from a null PlatFormInfos\n");
            std::abort();
        }
    }
    // Separated (A2/A3) chips report the vector core count here.
    uint32_t GetCoreNum() const { return info_->aivCoreNum; }
    uint32_t GetCoreNumAic() const { return info_->aicCoreNum; }
    uint32_t GetCoreNumAiv() const { return info_->aivCoreNum; }
    void GetCoreMemSize(const CoreMemType& memType, uint64_t& size) const {
        switch (memType) {
            case CoreMemType::L0_A: size = info_->l0aSize; break;
            case CoreMemType::L0_B: size = info_->l0bSize; break;
            case CoreMemType::L0_C: size = info_->l0cSize; break;
            case CoreMemType::L1: size = info_->l1Size; break;
            case CoreMemType::L2: size = info_->l2Size; break;
            case CoreMemType::UB: size = info_->ubSize; break;
            case CoreMemType::HBM: size = info_->hbmSize; break;
            default: size = 0; break;
        }
    }
    // The stub's platform says which SoC it is (PlatFormInfos::socVersion; 910B by default).
    SocVersion GetSocVersion() const { return static_cast<SocVersion>(info_->socVersion); }
    uint32_t GetLibApiWorkSpaceSize() const { return info_->libApiWorkSpaceSize; }
    fe::PlatFormInfos* GetPlatFormInfo() const { return info_; }

private:
    fe::PlatFormInfos* info_;
};
}  // namespace platform_ascendc
#endif
