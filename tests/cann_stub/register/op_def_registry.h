// Stand-in for register/op_def_registry.h: gert::TilingContext and friends, only the methods
// generated code calls (ascendc_tiling.md §2.2-2.4).
#ifndef ASCEND_TUNE_STUB_OP_DEF_REGISTRY_H
#define ASCEND_TUNE_STUB_OP_DEF_REGISTRY_H
#include <cstddef>
#include <cstdint>
#include <vector>
#include "tiling/platform/platform_ascendc.h"
namespace ge {
using graphStatus = uint32_t;
constexpr graphStatus GRAPH_SUCCESS = 0;
constexpr graphStatus GRAPH_FAILED = 0xFFFFFFFF;
}  // namespace ge
namespace gert {
class Shape {
public:
    std::vector<int64_t> dims;
    int64_t GetDim(size_t i) const { return i < dims.size() ? dims[i] : 0; }
    size_t GetDimNum() const { return dims.size(); }
    int64_t GetShapeSize() const {
        int64_t n = 1;
        for (int64_t d : dims) n *= d;
        return n;
    }
};
class StorageShape {
public:
    Shape shape;
    const Shape& GetStorageShape() const { return shape; }
    const Shape& GetOriginShape() const { return shape; }
};
class TilingData {
public:
    std::vector<uint8_t> buffer = std::vector<uint8_t>(4096);
    size_t size = 0;
    void* GetData() { return buffer.data(); }
    size_t GetCapacity() const { return buffer.size(); }
    void SetDataSize(size_t n) { size = n; }
};
class TilingContext {
public:
    std::vector<StorageShape> inputs;
    fe::PlatFormInfos platform;
    TilingData raw;
    uint32_t blockDim = 0;
    uint64_t tilingKey = 0;
    std::vector<size_t> workspace = std::vector<size_t>(1);
    const StorageShape* GetInputShape(size_t i) const {
        return i < inputs.size() ? &inputs[i] : nullptr;
    }
    fe::PlatFormInfos* GetPlatformInfo() { return &platform; }
    TilingData* GetRawTilingData() { return &raw; }
    template <typename T>
    T* GetTilingData() {
        raw.size = sizeof(T);
        return raw.buffer.size() >= sizeof(T) ? reinterpret_cast<T*>(raw.buffer.data()) : nullptr;
    }
    void SetBlockDim(uint32_t n) { blockDim = n; }
    void SetTilingKey(uint64_t k) { tilingKey = k; }
    size_t* GetWorkspaceSizes(size_t) { return workspace.data(); }
};
}  // namespace gert
#endif
