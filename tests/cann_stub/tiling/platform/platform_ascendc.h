// Stand-in for tiling/platform/platform_ascendc.h (ascendc_tiling.md §2.3).
#ifndef ASCEND_TUNE_STUB_PLATFORM_ASCENDC_H
#define ASCEND_TUNE_STUB_PLATFORM_ASCENDC_H
#include <cstdint>
namespace fe {
struct PlatFormInfos {
    uint32_t aicCoreNum = 20;
    uint32_t aivCoreNum = 40;
};
}  // namespace fe
namespace platform_ascendc {
class PlatformAscendC {
public:
    explicit PlatformAscendC(fe::PlatFormInfos* info) : info_(info) {}
    uint32_t GetCoreNum() const { return info_->aivCoreNum; }
    uint32_t GetCoreNumAic() const { return info_->aicCoreNum; }
    uint32_t GetCoreNumAiv() const { return info_->aivCoreNum; }

private:
    fe::PlatFormInfos* info_;
};
}  // namespace platform_ascendc
#endif
