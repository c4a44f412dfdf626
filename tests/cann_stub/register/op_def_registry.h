// Stand-in for register/op_def_registry.h (CANN 8.1 include/register/op_def_registry.h with
// op_def.h, exe_graph/runtime/{shape,storage_shape,tiling_context,tiling_data,
// infer_shape_context,infer_datatype_context}.h and graph/types.h; ascendc_tiling.md §2).
// Host-only, C++11; only the 8.1 API, with the real signatures and return types:
//  - ge::graphStatus, GRAPH_SUCCESS / GRAPH_FAILED, ge::DataType and ge::Format (real values);
//  - gert::Shape (at most 8 dims; GetDim past GetDimNum() gives kInvalidDimValue and SetDim
//    past it aborts, where CANN reads or writes a stale slot), gert::StorageShape;
//  - gert::TilingContext: raw tiling data starts as 0xA5 garbage, as CANN's is uninitialised;
//    GetTilingData<T> returns nullptr when the capacity is short and sets the data size;
//    SetDataSize beyond the capacity aborts; workspace sizes start as SIZE_MAX ("not set");
//  - gert::InferShapeContext, gert::InferDataTypeContext;
//  - ops::OpDef / OpParamDef / OpAttrDef / OpAICoreDef and OP_ADD, which registers the op at
//    static-initialisation time into a process-wide registry and aborts on a second op of the
//    same name, a parameter whose DataType and Format lists differ in length, parameters with
//    different numbers of dtype combinations, or an unknown AddConfig SoC.
// Aborts print one line starting "CANN stub:" to stderr. The public data members of the
// contexts and fe::PlatFormInfos are test knobs (opaque in CANN), as is ops::StubOpRegistry.
#ifndef ASCEND_TUNE_STUB_OP_DEF_REGISTRY_H
#define ASCEND_TUNE_STUB_OP_DEF_REGISTRY_H
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>
#include "tiling/platform/platform_ascendc.h"

#define ASCEND_TUNE_STUB_OP_EXPORT __attribute__((visibility("default")))

namespace ge {
using graphStatus = uint32_t;
const graphStatus GRAPH_SUCCESS = 0;
const graphStatus GRAPH_FAILED = 0xFFFFFFFF;

enum DataType {
    DT_FLOAT = 0, DT_FLOAT16 = 1, DT_INT8 = 2, DT_INT32 = 3, DT_UINT8 = 4, DT_INT16 = 6,
    DT_UINT16 = 7, DT_UINT32 = 8, DT_INT64 = 9, DT_UINT64 = 10, DT_DOUBLE = 11, DT_BOOL = 12,
    DT_STRING = 13, DT_COMPLEX64 = 16, DT_COMPLEX128 = 17, DT_BF16 = 27, DT_UNDEFINED = 28,
    DT_INT4 = 29, DT_MAX
};

enum Format {
    FORMAT_NCHW = 0, FORMAT_NHWC = 1, FORMAT_ND = 2, FORMAT_NC1HWC0 = 3, FORMAT_FRACTAL_Z = 4,
    FORMAT_FRACTAL_NZ = 29, FORMAT_RESERVED = 40, FORMAT_MAX = 0xff
};
}  // namespace ge

namespace gert {
namespace stub {
inline void Fail(const std::string& message) {
    std::fprintf(stderr, "CANN stub: %s\n", message.c_str());
    std::fflush(stderr);
    std::abort();
}
}  // namespace stub

class Shape {
public:
    static constexpr size_t kMaxDimNum = 8;
    static constexpr int64_t kInvalidDimValue = std::numeric_limits<int64_t>::min();

    Shape() : dim_num_(0) { Clear(); }
    Shape(std::initializer_list<int64_t> dims) : dim_num_(0) {
        Clear();
        for (std::initializer_list<int64_t>::const_iterator it = dims.begin(); it != dims.end();
             ++it) {
            AppendDim(*it);
        }
    }
    bool operator==(const Shape& rht) const {
        if (dim_num_ != rht.dim_num_) return false;
        for (size_t i = 0; i < dim_num_; ++i) {
            if (dims_[i] != rht.dims_[i]) return false;
        }
        return true;
    }
    bool operator!=(const Shape& rht) const { return !(*this == rht); }
    size_t GetDimNum() const { return dim_num_; }
    void SetDimNum(size_t dim_num) {
        if (dim_num > kMaxDimNum) {
            stub::Fail("Shape::SetDimNum(" + std::to_string(dim_num) + "): at most 8 dims");
        }
        dim_num_ = dim_num;
    }
    int64_t GetDim(size_t idx) const {
        if (idx < dim_num_) return dims_[idx];
        return kInvalidDimValue;
    }
    void SetDim(size_t idx, int64_t dim_value) {
        if (idx >= dim_num_) {
            stub::Fail("Shape::SetDim(" + std::to_string(idx) + ") on a shape of " +
                       std::to_string(dim_num_) + " dims; call SetDimNum first");
        }
        dims_[idx] = dim_value;
    }
    Shape& AppendDim(int64_t value) {
        if (dim_num_ >= kMaxDimNum) stub::Fail("Shape::AppendDim: at most 8 dims");
        dims_[dim_num_++] = value;
        return *this;
    }
    bool IsScalar() const { return dim_num_ == 0; }
    int64_t GetShapeSize() const {
        int64_t size = 1;
        for (size_t i = 0; i < dim_num_; ++i) {
            if (dims_[i] < 0) return -1;
            size *= dims_[i];
        }
        return size;
    }

private:
    void Clear() {
        for (size_t i = 0; i < kMaxDimNum; ++i) dims_[i] = 0;
    }
    size_t dim_num_;
    int64_t dims_[kMaxDimNum];
};

class StorageShape {
public:
    StorageShape() {}
    StorageShape(std::initializer_list<int64_t> origin_shape,
                 std::initializer_list<int64_t> storage_shape)
        : origin_shape_(origin_shape), storage_shape_(storage_shape) {}
    const Shape& GetOriginShape() const { return origin_shape_; }
    const Shape& GetStorageShape() const { return storage_shape_; }
    Shape& MutableOriginShape() { return origin_shape_; }
    Shape& MutableStorageShape() { return storage_shape_; }

private:
    Shape origin_shape_;
    Shape storage_shape_;
};

class TilingData {
public:
    explicit TilingData(size_t capacity = 4096) { Reset(capacity); }
    void* GetData() { return storage_.data(); }
    const void* GetData() const { return storage_.data(); }
    size_t GetCapacity() const { return capacity_; }
    size_t GetDataSize() const { return size; }
    void SetDataSize(size_t data_size) {
        if (data_size > capacity_) {
            stub::Fail("TilingData::SetDataSize(" + std::to_string(data_size) +
                       ") exceeds the capacity " + std::to_string(capacity_));
        }
        size = data_size;
    }
    // Test knob: a fresh buffer of `capacity` bytes of 0xA5, data size 0.
    void Reset(size_t capacity) {
        capacity_ = capacity;
        storage_.assign((capacity + 7) / 8, 0xA5A5A5A5A5A5A5A5ULL);
        size = 0;
    }
    size_t size;  // test knob: what SetDataSize recorded

private:
    size_t capacity_;
    std::vector<uint64_t> storage_;  // 8-byte aligned, like the runtime's
};

class CompileTimeTensorDesc {
public:
    ge::DataType GetDataType() const { return dataType; }
    ge::Format GetOriginFormat() const { return format; }
    ge::Format GetStorageFormat() const { return format; }
    ge::DataType dataType = ge::DT_FLOAT16;  // test knobs
    ge::Format format = ge::FORMAT_ND;
};

// The operator's attributes as the runtime passes them (MD exe_graph/runtime/runtime_attrs.h):
// GetAttrPointer<T>(index), index = the attribute's position in the OpDef. The real one
// reinterprets the bytes; the stand-in fails on a type other than the one stored, and returns
// nullptr past the last attribute, as the real one does.
class RuntimeAttrs {
public:
    template <typename T>
    const T* GetAttrPointer(size_t index) const {
        if (index >= values_.size()) return nullptr;
        const Value& v = values_[index];
        if (v.kind != KindOf(static_cast<const T*>(nullptr))) {
            stub::Fail("RuntimeAttrs::GetAttrPointer(" + std::to_string(index) +
                       "): the attribute holds another type");
        }
        return reinterpret_cast<const T*>(v.bytes);
    }
    const int64_t* GetInt(size_t index) const { return GetAttrPointer<int64_t>(index); }
    const float* GetFloat(size_t index) const { return GetAttrPointer<float>(index); }
    const bool* GetBool(size_t index) const { return GetAttrPointer<bool>(index); }
    size_t GetAttrNum() const { return values_.size(); }

    // Test knobs: attribute `index` holds `value` (the runtime fills these in CANN).
    void SetFloat(size_t index, float value) { Set(index, 1, &value, sizeof(value)); }
    void SetInt(size_t index, int64_t value) { Set(index, 2, &value, sizeof(value)); }
    void SetBool(size_t index, bool value) { Set(index, 3, &value, sizeof(value)); }
    void Clear() { values_.clear(); }

private:
    struct Value {
        int kind;
        alignas(8) unsigned char bytes[8];
    };
    static int KindOf(const float*) { return 1; }
    static int KindOf(const int64_t*) { return 2; }
    static int KindOf(const bool*) { return 3; }
    void Set(size_t index, int kind, const void* value, size_t size) {
        if (values_.size() <= index) values_.resize(index + 1, Value{0, {0}});
        values_[index].kind = kind;
        std::memcpy(values_[index].bytes, value, size);
    }
    std::vector<Value> values_;
};

class TilingContext {
public:
    const RuntimeAttrs* GetAttrs() const { return &attrs; }
    static constexpr size_t kStubWorkspaceCapacity = 8;

    const StorageShape* GetInputShape(size_t index) const {
        return index < inputs.size() ? &inputs[index] : nullptr;
    }
    const StorageShape* GetOptionalInputShape(size_t ir_index) const {
        return GetInputShape(ir_index);
    }
    const StorageShape* GetOutputShape(size_t index) const {
        return index < outputs.size() ? &outputs[index] : nullptr;
    }
    const CompileTimeTensorDesc* GetInputDesc(size_t index) const {
        return index < inputDescs.size() ? &inputDescs[index] : nullptr;
    }
    fe::PlatFormInfos* GetPlatformInfo() const { return &platform; }
    TilingData* GetRawTilingData() { return &raw; }
    template <typename T>
    T* GetTilingData() {
        static_assert(std::is_trivially_copyable<T>::value,
                      "GetTilingData<T>: T must be a plain struct (copied to the kernel as bytes)");
        TilingData* tiling_data = GetRawTilingData();
        if (tiling_data->GetCapacity() < sizeof(T)) return nullptr;
        tiling_data->SetDataSize(sizeof(T));
        return static_cast<T*>(tiling_data->GetData());
    }
    ge::graphStatus SetBlockDim(uint32_t block_dim) {
        blockDim = block_dim;
        return ge::GRAPH_SUCCESS;
    }
    uint32_t GetBlockDim() const { return blockDim; }
    ge::graphStatus SetTilingKey(uint64_t tiling_key) {
        tilingKey = tiling_key;
        return ge::GRAPH_SUCCESS;
    }
    uint64_t GetTilingKey() const { return tilingKey; }
    size_t* GetWorkspaceSizes(size_t workspace_count) {
        if (workspace_count > kStubWorkspaceCapacity) return nullptr;
        workspaceNum = workspace_count;
        return workspaceSizes;
    }
    size_t GetWorkspaceNum() const { return workspaceNum; }
    ge::graphStatus SetScheduleMode(uint32_t schedule_mode) {
        scheduleMode = schedule_mode;
        return ge::GRAPH_SUCCESS;
    }
    ge::graphStatus SetNeedAtomic(bool atomic) {
        needAtomic = atomic;
        return ge::GRAPH_SUCCESS;
    }

    // Test knobs (the runtime fills these in CANN).
    RuntimeAttrs attrs;
    std::vector<StorageShape> inputs;
    std::vector<StorageShape> outputs;
    std::vector<CompileTimeTensorDesc> inputDescs;
    mutable fe::PlatFormInfos platform;
    TilingData raw;
    uint32_t blockDim = 0;
    uint64_t tilingKey = 0;
    uint32_t scheduleMode = 0;
    bool needAtomic = false;
    size_t workspaceNum = 0;
    size_t workspaceSizes[kStubWorkspaceCapacity] = {
        SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX};
};

class InferShapeContext {
public:
    const Shape* GetInputShape(size_t index) const {
        return index < inputs.size() ? &inputs[index] : nullptr;
    }
    const Shape* GetOptionalInputShape(size_t ir_index) const { return GetInputShape(ir_index); }
    Shape* GetOutputShape(size_t index) {
        return index < outputs.size() ? &outputs[index] : nullptr;
    }
    std::vector<Shape> inputs;  // test knobs
    std::vector<Shape> outputs;
};

class InferDataTypeContext {
public:
    ge::DataType GetInputDataType(size_t index) const {
        return index < inputs.size() ? inputs[index] : ge::DT_UNDEFINED;
    }
    ge::DataType GetOutputDataType(size_t index) const {
        return index < outputs.size() ? outputs[index] : ge::DT_UNDEFINED;
    }
    ge::graphStatus SetOutputDataType(size_t index, ge::DataType datatype) {
        if (index >= outputs.size()) return ge::GRAPH_FAILED;
        outputs[index] = datatype;
        return ge::GRAPH_SUCCESS;
    }
    std::vector<ge::DataType> inputs;  // test knobs
    std::vector<ge::DataType> outputs;
};

class OpImplRegisterV2 {
public:
    typedef uint32_t (*TilingKernelFunc)(TilingContext*);
    typedef uint32_t (*InferShapeKernelFunc)(InferShapeContext*);
    typedef uint32_t (*InferDataTypeKernelFunc)(InferDataTypeContext*);
};
}  // namespace gert

namespace ops {
enum Option { IGNORE = 0, OPTIONAL = 1, REQUIRED = 2, DYNAMIC = 3, VIRTUAL = 4 };

class OpParamDef {
public:
    explicit OpParamDef(const char* name) : name_(name) {}
    OpParamDef& ParamType(Option param_type) {
        param_type_ = param_type;
        return *this;
    }
    OpParamDef& DataType(std::vector<ge::DataType> types) {
        types_ = types;
        return *this;
    }
    OpParamDef& Format(std::vector<ge::Format> formats) {
        formats_ = formats;
        return *this;
    }
    OpParamDef& UnknownShapeFormat(std::vector<ge::Format> formats) {
        unknown_shape_formats_ = formats;
        return *this;
    }
    const std::string& GetParamName() const { return name_; }
    Option GetParamType() const { return param_type_; }
    const std::vector<ge::DataType>& GetDataTypes() const { return types_; }
    const std::vector<ge::Format>& GetFormats() const { return formats_; }
    const std::vector<ge::Format>& GetUnknownShapeFormats() const {
        return unknown_shape_formats_;
    }

private:
    std::string name_;
    Option param_type_ = REQUIRED;
    std::vector<ge::DataType> types_;
    std::vector<ge::Format> formats_;
    std::vector<ge::Format> unknown_shape_formats_;
};

class OpAttrDef {
public:
    explicit OpAttrDef(const char* name) : name_(name) {}
    OpAttrDef& AttrType(Option attr_type) {
        attr_type_ = attr_type;
        return *this;
    }
    OpAttrDef& Bool(bool value) { return Set("bool", value ? 1.0 : 0.0); }
    OpAttrDef& Float(float value) { return Set("float", value); }
    OpAttrDef& Int(int64_t value) { return Set("int", static_cast<double>(value)); }
    const std::string& GetName() const { return name_; }
    Option GetAttrType() const { return attr_type_; }
    const std::string& GetKind() const { return kind_; }
    double GetValue() const { return value_; }

private:
    OpAttrDef& Set(const char* kind, double value) {
        kind_ = kind;
        value_ = value;
        return *this;
    }
    std::string name_;
    Option attr_type_ = REQUIRED;
    std::string kind_;
    double value_ = 0.0;
};

class OpAICoreDef {
public:
    OpAICoreDef& SetTiling(gert::OpImplRegisterV2::TilingKernelFunc func) {
        tiling_ = func;
        return *this;
    }
    OpAICoreDef& AddConfig(const char* soc) {
        static const char* const kKnown[] = {"ascend910", "ascend910b", "ascend910_93",
                                             "ascend310p", "ascend310b"};
        bool known = false;
        for (size_t i = 0; i < sizeof(kKnown) / sizeof(kKnown[0]); ++i) {
            known = known || std::strcmp(soc, kKnown[i]) == 0;
        }
        if (!known) {
            gert::stub::Fail(std::string("AddConfig(\"") + soc + "\"): not a SoC short name "
                             "such as ascend910b");
        }
        configs_.push_back(soc);
        return *this;
    }
    gert::OpImplRegisterV2::TilingKernelFunc GetTiling() const { return tiling_; }
    const std::vector<std::string>& GetConfigs() const { return configs_; }

private:
    gert::OpImplRegisterV2::TilingKernelFunc tiling_ = nullptr;
    std::vector<std::string> configs_;
};

class OpDef {
public:
    explicit OpDef(const char* type) : type_(type) {}
    OpParamDef& Input(const char* name) { return Param(inputs_, name); }
    OpParamDef& Output(const char* name) { return Param(outputs_, name); }
    OpAttrDef& Attr(const char* name) {
        for (size_t i = 0; i < attrs_.size(); ++i) {
            if (attrs_[i].GetName() == name) return attrs_[i];
        }
        attrs_.push_back(OpAttrDef(name));
        return attrs_.back();
    }
    OpDef& SetInferShape(gert::OpImplRegisterV2::InferShapeKernelFunc func) {
        infer_shape_ = func;
        return *this;
    }
    OpDef& SetInferDataType(gert::OpImplRegisterV2::InferDataTypeKernelFunc func) {
        infer_data_type_ = func;
        return *this;
    }
    OpAICoreDef& AICore() { return aicore_; }

    const std::string& GetOpType() const { return type_; }
    const std::vector<OpParamDef>& GetInputs() const { return inputs_; }
    const std::vector<OpParamDef>& GetOutputs() const { return outputs_; }
    const std::vector<OpAttrDef>& GetAttrs() const { return attrs_; }
    gert::OpImplRegisterV2::InferShapeKernelFunc GetInferShape() const { return infer_shape_; }
    gert::OpImplRegisterV2::InferDataTypeKernelFunc GetInferDataType() const {
        return infer_data_type_;
    }
    const OpAICoreDef& GetAICore() const { return aicore_; }

private:
    static OpParamDef& Param(std::vector<OpParamDef>& params, const char* name) {
        for (size_t i = 0; i < params.size(); ++i) {
            if (params[i].GetParamName() == name) return params[i];
        }
        params.push_back(OpParamDef(name));
        return params.back();
    }
    std::string type_;
    std::vector<OpParamDef> inputs_;
    std::vector<OpParamDef> outputs_;
    std::vector<OpAttrDef> attrs_;
    gert::OpImplRegisterV2::InferShapeKernelFunc infer_shape_ = nullptr;
    gert::OpImplRegisterV2::InferDataTypeKernelFunc infer_data_type_ = nullptr;
    OpAICoreDef aicore_;
};

// Query API for tests (not part of CANN): the ops OP_ADD registered, in registration order.
struct StubOpEntry {
    std::string name;
    OpDef def;
    std::string site;
};

class StubOpRegistry {
public:
    ASCEND_TUNE_STUB_OP_EXPORT static StubOpRegistry& Instance() {
        static StubOpRegistry registry;
        return registry;
    }
    const std::vector<StubOpEntry>& Ops() const { return ops_; }
    const OpDef* Find(const std::string& name) const {
        for (size_t i = 0; i < ops_.size(); ++i) {
            if (ops_[i].name == name) return &ops_[i].def;
        }
        return nullptr;
    }
    bool Add(const char* name, const OpDef& def, const char* file, int line) {
        const std::string site = std::string(file) + ":" + std::to_string(line);
        for (size_t i = 0; i < ops_.size(); ++i) {
            if (ops_[i].name == name) {
                gert::stub::Fail(std::string("OP_ADD(") + name + ") twice: " + ops_[i].site +
                                 " and " + site);
            }
        }
        if (def.GetOpType() != name) {
            gert::stub::Fail(std::string("OP_ADD(") + name + "): OpDef built with type " +
                             def.GetOpType());
        }
        size_t combos = 0;
        const std::vector<OpParamDef>* lists[] = {&def.GetInputs(), &def.GetOutputs()};
        for (size_t l = 0; l < 2; ++l) {
            for (size_t i = 0; i < lists[l]->size(); ++i) {
                const OpParamDef& p = (*lists[l])[i];
                const std::string what = std::string(name) + (l == 0 ? " input " : " output ") +
                                         p.GetParamName();
                const size_t n = p.GetDataTypes().size();
                if (n == 0) gert::stub::Fail(what + " declares no DataType");
                if (p.GetFormats().size() != n) {
                    gert::stub::Fail(what + ": " + std::to_string(n) + " DataType entries but " +
                                     std::to_string(p.GetFormats().size()) + " Format entries");
                }
                if (!p.GetUnknownShapeFormats().empty() && p.GetUnknownShapeFormats().size() != n) {
                    gert::stub::Fail(what + ": UnknownShapeFormat length differs from DataType");
                }
                if (combos != 0 && n != combos) {
                    gert::stub::Fail(what + ": " + std::to_string(n) +
                                     " dtype combinations, other parameters have " +
                                     std::to_string(combos));
                }
                combos = n;
            }
        }
        StubOpEntry entry = {name, def, site};
        ops_.push_back(entry);
        return true;
    }

private:
    StubOpRegistry() {}
    std::vector<StubOpEntry> ops_;
};
}  // namespace ops

// Used inside namespace ops after the class definition, as msOpGen writes it.
#define OP_ADD(opType, ...)                                                                  \
    static ::ops::OpDef opType##_StubCreate(const char* name) { return opType(name); }       \
    static const bool g_##opType##_stub_added __attribute__((unused)) =                      \
        ::ops::StubOpRegistry::Instance().Add(#opType, opType##_StubCreate(#opType), __FILE__, \
                                              __LINE__)
#endif
