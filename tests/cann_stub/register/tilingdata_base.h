// Stand-in for CANN's register/tilingdata_base.h (metadef inc/external/register/tilingdata_base.h,
// impl base/asc/tilingdata_base_impl.cc; ascendc_tiling.md §1, cann_integration.md §3).
// Host-only, C++11. As strict as the real header where that catches a broken project:
//  - field types limited to int8_t..uint64_t and float, spelled exactly (get_op_tiling.py);
//  - fields serialise at their offsets in declaration order, with no automatic padding (old
//    metadef); a field whose offset is not a multiple of its size, or a nested struct not at a
//    multiple of 8, aborts, because old and new metadef (which pads) would then disagree;
//  - GetDataSize() is the raw byte size; REGISTER_TILING_DATA_CLASS aborts if it is not a
//    multiple of 8 (the replay build copies sizeof / 8 uint64 words: tiling_data_def_build.py);
//  - TILING_DATA_FIELD_DEF_STRUCT takes only macro-defined classes that are registered
//    (library ones via tiling/tiling_api.h, user ones as REGISTER_TILING_DATA_CLASS(SOp, S));
//  - one class name defined in two places is "tiling struct [X] is conflict" (a warning in
//    metadef, an ODR violation in one library: fatal here); one op type registered from two
//    places (with any classes) aborts. Re-running the same registration from the same line
//    (a header included by several units) is accepted, as metadef's per-unit registrars are.
// Every abort prints one line starting "CANN stub:" to stderr at static-initialisation time.
// Tests read the registry through optiling::StubTilingRegistry (not part of CANN).
#ifndef ASCEND_TUNE_STUB_TILINGDATA_BASE_H
#define ASCEND_TUNE_STUB_TILINGDATA_BASE_H
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#define ASCEND_TUNE_STUB_EXPORT __attribute__((visibility("default")))

namespace optiling {
namespace stub {
inline void Fail(const std::string& message) {
    std::fprintf(stderr, "CANN stub: %s\n", message.c_str());
    std::fflush(stderr);
    std::abort();
}

constexpr bool StrEq(const char* a, const char* b) {
    return *a == *b && (*a == '\0' || StrEq(a + 1, b + 1));
}

// The element types the kernel-side generators know (get_op_tiling.py get_bytes_by_type).
constexpr bool AllowedFieldType(const char* t) {
    return StrEq(t, "int8_t") || StrEq(t, "uint8_t") || StrEq(t, "int16_t") ||
           StrEq(t, "uint16_t") || StrEq(t, "int32_t") || StrEq(t, "uint32_t") ||
           StrEq(t, "int64_t") || StrEq(t, "uint64_t") || StrEq(t, "float");
}

struct Site {
    std::string file;
    int line;
    bool operator==(const Site& o) const { return line == o.line && file == o.file; }
    std::string Text() const { return file + ":" + std::to_string(line); }
};
}  // namespace stub

// Query API for tests (not part of CANN).
struct StubTilingClass {
    std::string opType;
    std::string className;
    size_t dataSize;
    std::string site;
};

class StubTilingRegistry {
public:
    // One process-wide instance even when the registering code sits in a library built with
    // -fvisibility=hidden (metadef keeps it in libregister.so).
    ASCEND_TUNE_STUB_EXPORT static StubTilingRegistry& Instance() {
        static StubTilingRegistry registry;
        return registry;
    }
    // Op types in registration order.
    const std::vector<StubTilingClass>& Classes() const { return classes_; }
    const StubTilingClass* Find(const std::string& opType) const {
        for (size_t i = 0; i < classes_.size(); ++i) {
            if (classes_[i].opType == opType) return &classes_[i];
        }
        return nullptr;
    }

    // BEGIN_TILING_DATA_DEF (metadef TilingDataStructBase::RecordTilingStruct).
    bool RecordStruct(const char* name, const char* file, int line) {
        stub::Site site = {file, line};
        std::map<std::string, stub::Site>::const_iterator it = defined_.find(name);
        if (it != defined_.end() && !(it->second == site)) {
            stub::Fail(std::string("tiling struct [") + name + "] is conflict with one in file " +
                       it->second.Text() + " (defined again at " + site.Text() +
                       "); give every operator its own TilingData class name");
        }
        defined_.insert(std::make_pair(std::string(name), site));
        return true;
    }

    // REGISTER_TILING_DATA_CLASS (metadef CTilingDataClassFactory::RegisterTilingData).
    bool Register(const char* opType, const char* className, size_t dataSize, const char* file,
                  int line) {
        const std::string where = std::string(file) + ":" + std::to_string(line);
        const StubTilingClass* old = Find(opType);
        if (old != nullptr) {
            if (old->className == className && old->site == where) return true;  // same unit
            stub::Fail(std::string("op type [") + opType + "] registered twice: class [" +
                       old->className + "] at " + old->site + " and class [" + className +
                       "] at " + where);
        }
        if (dataSize % 8 != 0) {
            stub::Fail(std::string("tiling data class [") + className + "] of op [" + opType +
                       "] is " + std::to_string(dataSize) +
                       " bytes, not a multiple of 8; the replay build copies sizeof / 8 uint64 "
                       "words and drops the tail (pad it explicitly)");
        }
        StubTilingClass entry = {opType, className, dataSize, where};
        classes_.push_back(entry);
        return true;
    }
    bool IsRegisteredClass(const std::string& className) const {
        for (size_t i = 0; i < classes_.size(); ++i) {
            if (classes_[i].className == className) return true;
        }
        return false;
    }

private:
    StubTilingRegistry() {}
    std::vector<StubTilingClass> classes_;
    std::map<std::string, stub::Site> defined_;
};

class TilingDef {
public:
    TilingDef() {}
    virtual ~TilingDef() {}
    // Copies would alias nested-struct bookkeeping (metadef's would double free its buffer).
    TilingDef(const TilingDef&) = delete;
    TilingDef& operator=(const TilingDef&) = delete;

    void SaveToBuffer(void* pdata, size_t capacity) {
        Sync();
        if (pdata == nullptr || capacity < data_.size()) {
            stub::Fail(std::string("SaveToBuffer: ") + class_name_ + " needs " +
                       std::to_string(data_.size()) + " bytes, capacity is " +
                       std::to_string(capacity));
        }
        if (!data_.empty()) std::memcpy(pdata, data_.data(), data_.size());
    }
    size_t GetDataSize() const { return data_.size(); }
    const char* GetTilingClassName() const { return class_name_.c_str(); }

protected:
    // Places one field at the current end (no padding) and checks its alignment.
    size_t FieldHandler(const char* className, const char* type, const char* name, size_t size,
                        size_t align) {
        class_name_ = className;
        const size_t offset = data_.size();
        if (offset % align != 0) {
            stub::Fail(std::string("tiling data class [") + className + "]: field " + name +
                       " (" + type + ") at offset " + std::to_string(offset) +
                       " is not aligned to " + std::to_string(align) +
                       "; old metadef packs it there, new metadef pads first: order fields "
                       "widest first or add explicit padding fields");
        }
        data_.resize(offset + size, 0);
        return offset;
    }
    size_t StructFieldHandler(const char* className, const char* type, const char* name,
                              TilingDef& child) {
        if (!StubTilingRegistry::Instance().IsRegisteredClass(type)) {
            stub::Fail(std::string("tiling data class [") + className + "]: nested struct " +
                       type + " " + name + " is not a registered TilingData class (register it "
                       "with REGISTER_TILING_DATA_CLASS(" + type + "Op, " + type + "))");
        }
        const size_t offset = FieldHandler(className, type, name, child.GetDataSize(), 8);
        children_.push_back(std::make_pair(offset, &child));
        return offset;
    }
    void Write(size_t offset, const void* src, size_t size) {
        std::memcpy(&data_[offset], src, size);
    }
    void Read(size_t offset, void* dst, size_t size) const {
        std::memcpy(dst, &data_[offset], size);
    }
    uint8_t* At(size_t offset) { return &data_[offset]; }

private:
    void Sync() {
        for (size_t i = 0; i < children_.size(); ++i) {
            children_[i].second->Sync();
            const std::vector<uint8_t>& bytes = children_[i].second->data_;
            if (!bytes.empty()) std::memcpy(&data_[children_[i].first], bytes.data(), bytes.size());
        }
    }
    std::string class_name_;
    std::vector<uint8_t> data_;
    std::vector<std::pair<size_t, TilingDef*> > children_;
};
}  // namespace optiling

// Must be used inside namespace optiling, at namespace scope (the recorder is a static).
#define BEGIN_TILING_DATA_DEF(class_name)                                                    \
    namespace {                                                                              \
    const bool class_name##_stub_recorded __attribute__((unused)) =                          \
        ::optiling::StubTilingRegistry::Instance().RecordStruct(#class_name, __FILE__,       \
                                                                __LINE__);                   \
    }                                                                                        \
    class class_name : public TilingDef {                                                    \
    private:                                                                                 \
        static const char* StubClassName() { return #class_name; }                           \
                                                                                             \
    public:

#define TILING_DATA_FIELD_DEF(data_type, field_name)                                          \
    static_assert(::optiling::stub::AllowedFieldType(#data_type),                            \
                  "TILING_DATA_FIELD_DEF(" #data_type ", " #field_name "): the type must be "  \
                  "int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t, uint64_t "  \
                  "or float (get_op_tiling.py)");                                            \
                                                                                             \
private:                                                                                     \
    size_t field_name##_offset_ =                                                            \
        FieldHandler(StubClassName(), #data_type, #field_name, sizeof(data_type),            \
                     sizeof(data_type));                                                     \
                                                                                             \
public:                                                                                      \
    void set_##field_name(data_type value) {                                                 \
        Write(field_name##_offset_, &value, sizeof(data_type));                              \
    }                                                                                        \
    data_type get_##field_name() {                                                           \
        data_type value;                                                                     \
        Read(field_name##_offset_, &value, sizeof(data_type));                               \
        return value;                                                                        \
    }

#define TILING_DATA_FIELD_DEF_ARR(arr_type, arr_size, field_name)                             \
    static_assert(::optiling::stub::AllowedFieldType(#arr_type),                             \
                  "TILING_DATA_FIELD_DEF_ARR(" #arr_type ", ...): the type must be int8_t.."   \
                  "uint64_t or float (get_op_tiling.py)");                                   \
                                                                                             \
private:                                                                                     \
    size_t field_name##_offset_ =                                                            \
        FieldHandler(StubClassName(), #arr_type, #field_name, sizeof(arr_type) * (arr_size), \
                     sizeof(arr_type));                                                      \
                                                                                             \
public:                                                                                      \
    void set_##field_name(arr_type* value) {                                                 \
        Write(field_name##_offset_, value, sizeof(arr_type) * (arr_size));                   \
    }                                                                                        \
    arr_type* get_##field_name() { return reinterpret_cast<arr_type*>(At(field_name##_offset_)); }

#define TILING_DATA_FIELD_DEF_STRUCT(struct_type, field_name)                                 \
    static_assert(std::is_base_of<::optiling::TilingDef, struct_type>::value,                \
                  "TILING_DATA_FIELD_DEF_STRUCT(" #struct_type ", " #field_name "): only "     \
                  "BEGIN_TILING_DATA_DEF classes may be nested, not plain structs");         \
                                                                                             \
public:                                                                                      \
    struct_type field_name;                                                                  \
                                                                                             \
private:                                                                                     \
    size_t field_name##_offset_ =                                                            \
        StructFieldHandler(StubClassName(), #struct_type, #field_name, field_name);          \
                                                                                             \
public:

#define END_TILING_DATA_DEF }

#define REGISTER_TILING_DATA_CLASS(op_type, class_name)                                      \
    namespace {                                                                              \
    bool op_type##_##class_name##_StubRegister() {                                           \
        class_name probe;                                                                    \
        return ::optiling::StubTilingRegistry::Instance().Register(                          \
            #op_type, #class_name, probe.GetDataSize(), __FILE__, __LINE__);                 \
    }                                                                                        \
    const bool op_type##_##class_name##_stub_registered __attribute__((unused)) =            \
        op_type##_##class_name##_StubRegister();                                             \
    }
#endif
