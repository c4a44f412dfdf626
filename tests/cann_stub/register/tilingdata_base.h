// Stand-in for CANN's register/tilingdata_base.h: only the API surface generated code uses
// (ascendc_tiling.md §1.1-1.2). Fields serialise into a byte buffer in declaration order.
#ifndef ASCEND_TUNE_STUB_TILINGDATA_BASE_H
#define ASCEND_TUNE_STUB_TILINGDATA_BASE_H
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace optiling {
class TilingDef {
public:
    virtual ~TilingDef() = default;
    void SaveToBuffer(void* pdata, size_t capacity) {
        std::memcpy(pdata, data_.data(), data_.size() < capacity ? data_.size() : capacity);
    }
    size_t GetDataSize() const { return data_.size(); }

protected:
    size_t Reserve(size_t size) {
        size_t offset = (data_.size() + size - 1) / size * size;  // natural alignment
        data_.resize(offset + size);
        return offset;
    }
    std::vector<uint8_t> data_;
};
}  // namespace optiling

#define BEGIN_TILING_DATA_DEF(class_name) \
    class class_name : public TilingDef { \
    public:
#define TILING_DATA_FIELD_DEF(data_type, field_name)                                   \
private:                                                                               \
    data_type field_name##_ = 0;                                                       \
    size_t field_name##_offset_ = Reserve(sizeof(data_type));                          \
                                                                                       \
public:                                                                                \
    void set_##field_name(data_type v) {                                               \
        field_name##_ = v;                                                             \
        std::memcpy(data_.data() + field_name##_offset_, &v, sizeof(data_type));       \
    }                                                                                  \
    data_type get_##field_name() { return field_name##_; }
#define TILING_DATA_FIELD_DEF_STRUCT(struct_type, field_name) \
public:                                                       \
    struct_type field_name;
#define END_TILING_DATA_DEF }
#define REGISTER_TILING_DATA_CLASS(op_type, class_name) \
    [[maybe_unused]] static class_name* op_type##_##class_name##_registrar = nullptr;
#endif
